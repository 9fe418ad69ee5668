-- The study's Table 5: per classify run that used any of the report's runs as features (the latest run per
-- feature set), the mean and SD over trials of kappa, QWK and macro-F1 of every learner (clf_summary).
with report_runs as (
    select list(distinct run_name) as run_names
    from metric_cells_snapshot
),

classify_runs as (
    select
        clf_runs.*,
        list_sort(list_distinct(json_extract_string(clf_runs.feature_sources, '$[*].run_name'))) as source_runs,
        list_sort(list_distinct(json_extract_string(clf_runs.feature_sources, '$[*].cot'))) as source_cot,
        list_sort(list_distinct(json_extract_string(clf_runs.feature_sources, '$[*].confidence_method')))
            as source_confidence_methods
    from clf_runs
),

latest as (
    select classify_runs.*
    from classify_runs
    cross join report_runs
    where list_has_any(classify_runs.source_runs, report_runs.run_names)
    qualify row_number() over (partition by feature_set_id order by finished_at desc, classify_run_id desc) = 1
),

final as (
    select
        latest.classify_run_id,
        latest.collection_id,
        latest.feature_mode,
        array_to_string(latest.source_runs, ', ') as source_runs,
        array_to_string(latest.source_cot, ', ') as source_cot,
        array_to_string(latest.source_confidence_methods, ', ') as source_confidence_methods,
        latest.n_pairs,
        latest.n_excluded,
        latest.n_trials,
        latest.finished_at,
        summary.learner,
        summary.learner_kind,
        summary.kappa_mean,
        summary.kappa_sd,
        summary.qwk_mean,
        summary.qwk_sd,
        summary.f1_mean,
        summary.f1_sd
    from latest
    inner join clf_summary as summary using (classify_run_id)
)

select * from final
order by finished_at desc, classify_run_id, learner
