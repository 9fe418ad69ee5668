-- group_metrics_from(cells, threshold): groups_from's counts and every per-group value of agreement_from,
-- calibration_from, reliability_from and certainty_split(threshold, default 80), joined on the group, one row per
-- group: the one join that summary_from, long_from and method_comparison_from select their columns from. Nothing
-- is computed here but coverage_unconfident; the judgments are scanned once: the metric macros share one
-- materialized copy of the cells.
--   coverage_unconfident  n_unconfident / n_scored_confidence (= 1 - coverage_confident)
-- Usage: select * from group_metrics_from(threshold := 90)
create or replace macro group_metrics_from(cells := 'metrics_cells', threshold := 80) as table
with group_metrics_input as materialized (
    select * from query_table(cells)
),

groups as (
    select * from groups_from(cells := 'group_metrics_input')
),

agreement as (
    select * from agreement_from(cells := 'group_metrics_input')
),

calibration as (
    select * from calibration_from(cells := 'group_metrics_input')
),

reliability as (
    select * from reliability_from(cells := 'group_metrics_input')
),

split as (
    select * from certainty_split(threshold, cells := 'group_metrics_input')
),

final as (
    select
        groups.*,
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
        (split.n_unconfident / groups.n_scored_confidence)::double as coverage_unconfident,
        agreement.kappa_bin_0_123,
        agreement.kappa_bin_01_23,
        agreement.kappa_bin_012_3,
        agreement.krippendorff_alpha
    from groups
    inner join agreement using (run_id, personality, cot, confidence_method)
    inner join calibration using (run_id, personality, cot, confidence_method)
    inner join reliability using (run_id, personality, cot, confidence_method)
    inner join split using (run_id, personality, cot, confidence_method)
)

select * from final
