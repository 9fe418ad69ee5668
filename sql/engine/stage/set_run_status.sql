-- A run's state: 'running', 'published', 'failed_check' (its gate failed) or 'failed' (with the reason).
update {{ runs_table|ident }} set status = $status, status_reason = $status_reason, finished_at = $finished_at
where {{ run_id|ident }} = $run_id
