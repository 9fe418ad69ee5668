-- Why: shards of another warehouse or run must never be loaded here (two warehouses in one directory, a run
-- of the same name elsewhere). Any such line refuses the whole load.
select coalesce(warehouse_id, '?') as warehouse_id, coalesce(run_id, '?') as run_id, count(*) as n_lines
from staged_requests
where warehouse_id is distinct from $warehouse_id or run_id is distinct from $run_id
group by all
order by n_lines desc
