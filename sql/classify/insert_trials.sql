-- Publish a classify run's trial rows; clf_new_trials is registered by the caller.
insert into clf_trials
select
    classify_run_id, trial, seed, learner, learner_kind, kappa, qwk, f1, n_train, n_test,
    feature_set_id, created_at
from clf_new_trials
