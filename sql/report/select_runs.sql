-- The report header: one row per run with what it judged and how many of its judgments failed to parse.
-- n_label_failures: no usable label (never scored); n_confidence_missing: a label but no confidence, counted
-- over the settings that ask for one (null when none does: imports without confidences, method 'none').
with groups as (
    select * from groups_from(cells := 'metric_cells_snapshot')
),

runs as (
    select * from judge_runs
),

per_run as (
    select
        run_id,
        count(distinct personality) as n_personalities,
        string_agg(distinct case when cot then 'CoT' else 'no CoT' end, ', ' order by
            case when cot then 'CoT' else 'no CoT' end desc) as cot_settings,
        string_agg(distinct confidence_method, ', ' order by confidence_method) as confidence_methods,
        sum(n_judgments)::bigint as n_judgments,
        sum(n_label_failures)::bigint as n_label_failures,
        sum(n_confidence_missing) filter (where confidence_method <> 'none')::bigint as n_confidence_missing
    from groups
    group by run_id
),

final as (
    select
        runs.run_name,
        runs.source,
        runs.collection_id,
        coalesce(runs.subset_name, 'all') as subset_name,
        runs.model,
        runs.backend,
        runs.created_at,
        per_run.n_personalities,
        per_run.cot_settings,
        per_run.confidence_methods,
        per_run.n_judgments,
        per_run.n_label_failures,
        per_run.n_confidence_missing
    from per_run
    inner join runs using (run_id)
)

select * from final
order by collection_id, model, run_name
