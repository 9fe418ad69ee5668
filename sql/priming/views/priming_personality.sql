-- Does a personality shrink threshold priming? Per run, setting and personality, pooled over the run's
-- topics: the gap LT - HT and its paired t-test, and the change against the default personality on the
-- same epilogue passages (paired t-test of the per-passage gaps). Published runs only.
with runs as (
    select priming_run_id, run_name, collection_id, model from priming_runs where status = 'published'
),

pooled as (
    select * from priming_tests where query_id = '*'
),

final as (
    select
        r.run_name, r.model, r.collection_id, t.n_prologue, t.n_epilogue, t.personality,
        t.mean_ht, t.mean_lt,
        t.mean_lt - t.mean_ht as gap,
        t.t_stat, t.p_value, t.n_pairs,
        t.gap_vs_default, t.t_vs_default, t.p_vs_default, t.n_pairs_vs_default,
        case
            when t.p_vs_default < 0.05 and t.gap_vs_default < 0 then 'smaller'
            when t.p_vs_default < 0.05 and t.gap_vs_default > 0 then 'larger'
            when t.p_vs_default is not null then 'same'
        end as gap_change
    from pooled as t
    inner join runs as r using (priming_run_id)
)

select * from final
