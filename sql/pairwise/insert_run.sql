-- Register a pairwise run; its measures are published once its gate passes.
insert into pairwise_runs (pairwise_run_id, run_name, collection_id, subset_name, model, backend, seed, params, scope,
                           status, created_at)
values ($run_id, $run_name, $collection_id, $subset_name, $model, $backend, $seed, $params, $scope,
        'running', $created_at)
