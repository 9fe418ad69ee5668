-- A run's state: 'running', 'published', 'failed_check' (its gate failed) or 'failed' (with the reason).
update fuse_runs set status = $status, status_reason = $status_reason, finished_at = $finished_at
where fuse_run_id = $run_id
