-- One judge run by name, as `peras runs show` prints it (params as stored: sampling and run settings, never keys).
select
    run_id,
    run_name,
    source,
    collection_id,
    subset_name,
    model,
    backend,
    status,
    created_at,
    finished_at,
    params
from judge_runs
where run_name = $run_name
