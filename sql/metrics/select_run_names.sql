-- Run names and collections that have judgments, to name the choices when a filter matches nothing.
select distinct run_name, collection_id
from judge_runs
where run_id in (select run_id from judgments)
order by run_name
