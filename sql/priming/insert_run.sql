-- Register a priming run; its statistics are published once its gate passes.
insert into priming_runs (priming_run_id, run_name, collection_id, model, backend, seed, params, scope, status,
                          created_at)
values ($run_id, $run_name, $collection_id, $model, $backend, $seed, $params, $scope, 'running',
        $created_at)
