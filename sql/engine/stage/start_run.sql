-- An existing run called again (resumed or extended): the scope of this call and the backend asking now, running
-- again, with no reason left from an earlier failure. A call that probed the endpoint adds to the run's record the
-- requests its probe sent (the run's --request-budget counts them on every later call) and what it found (a later
-- call reuses it and sends no probe).
update {{ runs_table|ident }}
set {% for c in run_columns %}{{ c.name|ident }} = ${{ c.name|ident }}, {% endfor %}backend = $backend, status = 'running',
    status_reason = null, finished_at = null,
    params = case when $probe_requests > 0 then json_merge_patch(params, json_merge_patch($probe_found, json_object(
        'probe_requests', coalesce(cast(params->>'probe_requests' as bigint), 0) + $probe_requests
    ))) else params end
where {{ run_id|ident }} = $run_id
