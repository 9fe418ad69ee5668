-- The priming summary views the report shows, among those in the warehouse (the priming flow creates them;
-- an older warehouse or checkout may lack them). Parameters: view_names, in the order to show them.
with wanted as (
    select unnest($view_names::varchar[]) as view_name, generate_subscripts($view_names::varchar[], 1) as position
)

select wanted.view_name
from wanted
inner join duckdb_views() as views on views.view_name = wanted.view_name and not views.internal
order by wanted.position
