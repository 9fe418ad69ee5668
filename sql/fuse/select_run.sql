-- A fuse run by name: its id, what fixes it (collection, judge streams, model, seed), then its request parameters.
select fuse_run_id, collection_id, feature_set_id, model, seed, params from fuse_runs where run_name = $run_name
