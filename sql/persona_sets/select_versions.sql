-- The builds of a set name, newest first: to resume an unfinished one or number the next.
select version, status
from persona_sets
where set_name = $set_name
order by version desc
