-- Threshold priming per model x topic x setting x personality: mean epilogue score after a high-relevance
-- (HT) and a low-relevance (LT) prologue, the gap LT - HT (positive: scores drop after HT), and the paired
-- t-test over the epilogue passages (scipy.stats.ttest_rel(LT, HT)). Published runs only.
with runs as (
    select priming_run_id, run_name, collection_id, model from priming_runs where status = 'published'
),

tests as (
    select * from priming_tests where query_id != '*'
),

final as (
    select
        r.run_name, r.model, r.collection_id, t.query_id, t.n_prologue, t.n_epilogue, t.personality,
        t.mean_ht, t.mean_lt,
        t.mean_lt - t.mean_ht as gap,
        t.t_stat, t.p_value,
        t.n_pairs,
        coalesce(t.p_value < 0.05, false) as is_significant,
        t.gap_vs_default, t.p_vs_default
    from tests as t
    inner join runs as r using (priming_run_id)
)

select * from final
