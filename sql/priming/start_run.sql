-- An existing run asked again: record the scope of this call; statistics are recomputed for it.
update priming_runs set scope = $scope, backend = $backend, status = 'running', finished_at = null
where priming_run_id = $run_id
