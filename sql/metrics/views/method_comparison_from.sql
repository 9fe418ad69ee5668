-- method_comparison_from(cells, costs, threshold): one row per group for comparing confidence methods side by side
-- (the groups of one run, personality and CoT setting differ only in confidence_method): agreement, calibration,
-- reliability, the certainty split at threshold (default 80) and the cost in requests and tokens per judgment.
-- Nothing is computed here: the values are the metric macros', joined on the group by group_metrics_from.
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
with group_metrics as (
    select * from group_metrics_from(cells := cells, threshold := threshold)
),

group_costs as (
    select * from query_table(costs)
),

final as (
    select
        group_metrics.* exclude (kappa_bin_0_123, kappa_bin_01_23, kappa_bin_012_3, krippendorff_alpha),
        group_costs.n_requests,
        group_costs.n_requests_without_tokens,
        group_costs.requests_per_judgment,
        group_costs.prompt_tokens_per_judgment,
        group_costs.completion_tokens_per_judgment
    from group_metrics
    left join group_costs using (run_id, personality, cot, confidence_method)
)

select * from final
