-- Mean and sample standard deviation (ddof = 1) of each metric over the trials of a classify run.
with trials as (
    select * from clf_trials
),

final as (
    select
        classify_run_id,
        learner,
        learner_kind,
        feature_set_id,
        count(*) as n_trials,
        avg(kappa) as kappa_mean,
        stddev_samp(kappa) as kappa_sd,
        avg(qwk) as qwk_mean,
        stddev_samp(qwk) as qwk_sd,
        avg(f1) as f1_mean,
        stddev_samp(f1) as f1_sd,
        avg(n_train) as n_train_mean,
        avg(n_test) as n_test_mean
    from trials
    group by classify_run_id, learner, learner_kind, feature_set_id
)

select * from final
