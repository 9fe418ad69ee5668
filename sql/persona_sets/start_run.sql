-- A resumed build runs again (on the backend of this call).
update persona_sets set status = 'running', status_reason = null, backend = $backend, finished_at = null
where set_id = $run_id
