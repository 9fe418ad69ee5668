-- An existing check run asked again: record the scope of this call; it is checked and published again.
update persona_check_runs set scope = $scope, backend = $backend, status = 'running', status_reason = null,
    finished_at = null
where check_run_id = $run_id
