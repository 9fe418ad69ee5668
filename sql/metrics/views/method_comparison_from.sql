-- method_comparison_from(cells, costs, threshold): one row per group for comparing confidence methods side by side
-- (the groups of one run, personality and CoT setting differ only in confidence_method): agreement, calibration,
-- reliability, the certainty split at threshold (default 80) and the cost in requests and tokens per judgment.
-- Nothing is computed here but coverage_unconfident: the values are the metric macros', joined on the group.
--
-- From agreement_from (over the judgments with a label): accuracy, cohen_kappa, qwk, macro_f1. From calibration_from
-- (over the judgments with a label and a confidence): ece and mce (10 equal-width bins), ace and n_ace_bins (10
-- equal-mass bins), brier, nll (p clipped to [1e-6, 1 - 1e-6]), th_score (eps 0.1). From reliability_from: ro, ru,
-- hmr. From certainty_split(threshold): threshold, n_confident, accuracy_confident, coverage_confident,
-- n_unconfident, accuracy_unconfident. From costs (a relation shaped like metrics_request_costs, request_costs_from):
-- n_requests, n_requests_without_tokens and the requests, prompt tokens and completion tokens per judgment.
--   coverage_unconfident  n_unconfident / n_scored_confidence (= 1 - coverage_confident)
-- costs is joined on the group: with a filtered copy of the cells, the costs stay those of the whole group.
-- Usage: select * from method_comparison_from(threshold := 90)
create or replace macro method_comparison_from(cells := 'metrics_cells', costs := 'metrics_request_costs', threshold := 80) as table
with comparison_input as materialized (
    select * from query_table(cells)
),

agreement as (
    select * from agreement_from(cells := 'comparison_input')
),

calibration as (
    select * from calibration_from(cells := 'comparison_input')
),

reliability as (
    select * from reliability_from(cells := 'comparison_input')
),

split as (
    select * from certainty_split(threshold, cells := 'comparison_input')
),

group_costs as (
    select * from query_table(costs)
),

final as (
    select
        agreement.run_id,
        agreement.run_name,
        agreement.source,
        agreement.collection_id,
        agreement.subset_name,
        agreement.model,
        agreement.personality,
        agreement.cot,
        agreement.confidence_method,
        agreement.n_judgments,
        agreement.n_label_failures,
        calibration.n_confidence_missing,
        agreement.n_scored,
        calibration.n_scored_confidence,
        agreement.accuracy,
        agreement.cohen_kappa,
        agreement.qwk,
        agreement.macro_f1,
        calibration.ece,
        calibration.ace,
        calibration.n_ace_bins,
        calibration.mce,
        calibration.brier,
        calibration.nll,
        calibration.th_score,
        reliability.ro,
        reliability.ru,
        reliability.hmr,
        split.threshold,
        split.n_confident,
        split.accuracy_confident,
        split.coverage_confident,
        split.n_unconfident,
        split.accuracy_unconfident,
        (split.n_unconfident / calibration.n_scored_confidence)::double as coverage_unconfident,
        group_costs.n_requests,
        group_costs.n_requests_without_tokens,
        group_costs.requests_per_judgment,
        group_costs.prompt_tokens_per_judgment,
        group_costs.completion_tokens_per_judgment
    from agreement
    inner join calibration using (run_id, personality, cot, confidence_method)
    inner join reliability using (run_id, personality, cot, confidence_method)
    inner join split using (run_id, personality, cot, confidence_method)
    left join group_costs using (run_id, personality, cot, confidence_method)
)

select * from final
