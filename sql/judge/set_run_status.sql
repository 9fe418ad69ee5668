-- Publish a run (or mark its gate failed).
update judge_runs set status = $status, finished_at = $finished_at where run_id = $run_id
