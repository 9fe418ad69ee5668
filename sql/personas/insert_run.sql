-- Register a personas check run; its views show it once its gate passes.
insert into persona_check_runs (check_run_id, run_name, personality_set, model, backend, n_samples,
                                sample_temperature, seed, params, scope, status, created_at)
values ($run_id, $run_name, $personality_set, $model, $backend, $n_samples, $sample_temperature, $seed,
        $params, $scope, 'running', $created_at)
