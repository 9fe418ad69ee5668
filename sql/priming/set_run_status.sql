-- Publish a run (or mark its gate failed).
update priming_runs set status = $status, finished_at = $finished_at where priming_run_id = $priming_run_id
