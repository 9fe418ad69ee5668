-- Every build of a personality set as a run (`peras runs list --kind persona_sets`): a set version is named NAME@V.
create or replace view persona_set_runs as
select set_id, set_name || '@' || version as run_name, model, backend, params, status, status_reason, created_at,
       finished_at
from persona_sets
