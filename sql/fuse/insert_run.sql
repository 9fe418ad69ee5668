-- Register a fuse run; it is published once its votes are stored and, with a fuser, its gate passes.
insert into fuse_runs (fuse_run_id, run_name, collection_id, feature_set_id, model, backend, seed, params, scope,
                       status, created_at)
values ($run_id, $run_name, $collection_id, $feature_set_id, $model, $backend, $seed, $params, $scope, 'running',
        $created_at)
