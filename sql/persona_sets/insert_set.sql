-- A new version of a set, running.
insert into persona_sets (set_id, set_name, version, model, backend, params, status, created_at)
values ($set_id, $set_name, $version, $model, $backend, $params, 'running', $created_at)
