-- One run of a declared stage by name, as `peras runs show` prints it (params as stored: sampling, never keys).
select
    '{{ kind|ident }}' as kind, {{ run_id|ident }} as run_id, run_name, model, backend, status, status_reason,
    created_at, finished_at, params
from {{ runs_table|ident }}
where run_name = $run_name
