-- Resume or extend a fuse run: its latest scope, running again.
update fuse_runs set scope = $scope, status = 'running', status_reason = null, finished_at = null
where fuse_run_id = $run_id
