-- A build's state: 'running', 'published' or 'failed' (with the reason).
update persona_sets set status = $status, status_reason = $status_reason, finished_at = $finished_at
where set_id = $run_id
