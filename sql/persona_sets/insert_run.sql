-- A new version of a set, running (claimed by the engine's one rule, tasks/engine/runs.py: its runs are the view
-- persona_set_runs, so it stores them here).
insert into persona_sets (set_id, set_name, version, model, backend, params, status, created_at)
values ($run_id, $set_name, $version, $model, $backend, $params, 'running', $created_at)
