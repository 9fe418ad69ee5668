-- Resume or extend a pairwise run: its latest scope, running again.
update pairwise_runs set scope = $scope, status = 'running', status_reason = null, finished_at = null
where pairwise_run_id = $run_id
