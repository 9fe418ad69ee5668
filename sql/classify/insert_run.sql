-- Record one classify run.
insert into clf_runs (
    classify_run_id, collection_id, feature_set_id, feature_mode, feature_sources, feature_columns,
    n_pairs, n_excluded, n_trials, base_seed, train_fraction, learners, versions, started_at, finished_at
)
values (
    $classify_run_id, $collection_id, $feature_set_id, $feature_mode, $feature_sources, $feature_columns,
    $n_pairs, $n_excluded, $n_trials, $base_seed, $train_fraction, $learners, $versions, $started_at, $finished_at
)
