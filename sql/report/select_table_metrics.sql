-- The metrics of the study's Tables 7 and 8 (kappa, QWK, macro-F1; RO, RU, HMR) for every personality of the
-- report's runs, and ECE (the reliability diagrams' titles), each next to `default` of the same run and setting
-- (CoT x confidence method): vs_default_of's comparison, with default's own rows (default_value = value).
-- is_better: the metric beats default in its direction (false on a tie; null for default itself, for a null
-- value, or when the run/setting has no default group).
with long as (
    select * from metric_long_snapshot
    where metric in ('cohen_kappa', 'qwk', 'macro_f1', 'ro', 'ru', 'hmr', 'ece')
),

vs_default as (
    select run_id, cot, confidence_method, personality, metric, default_value, is_better
    from vs_default_of(metrics := 'metric_long_snapshot')
),

final as (
    select
        long.run_id,
        long.run_name,
        long.collection_id,
        long.subset_name,
        long.model,
        long.cot,
        long.confidence_method,
        long.personality,
        long.metric,
        long.value,
        if(long.personality = 'default', long.value, vs_default.default_value) as default_value,
        vs_default.is_better
    from long
    left join vs_default using (run_id, cot, confidence_method, personality, metric)
)

select * from final
order by collection_id, model, run_name, cot, confidence_method, personality, metric
