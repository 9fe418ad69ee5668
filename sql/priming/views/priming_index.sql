-- The priming index of a run, per personality: the mean over trials (topic x trial x setting) of
-- mean LT - mean HT epilogue score, with a 95% t confidence interval. Positive: priming. Published runs only.
with runs as (
    select priming_run_id, run_name, collection_id, model from priming_runs where status = 'published'
),

final as (
    select
        r.run_name, r.model, r.collection_id, i.personality, i.priming_index, i.ci_low, i.ci_high, i.sd,
        i.n_trials
    from priming_indexes as i
    inner join runs as r using (priming_run_id)
)

select * from final
