-- long_from(cells): every headline metric of every group as one row (group, metric, value), the shape that
-- comparisons across personalities need. is_higher_better gives the metric's direction (null: descriptive, such
-- as coverage, which no side wins). accuracy is agreement's (over every judgment with a label);
-- accuracy_confident and coverage_confident are certainty_split(80)'s. Null values are kept.
-- The judgments are scanned once: the four metric macros share one materialized copy of the cells.
create or replace macro long_from(cells := 'metrics_cells') as table
with long_input as materialized (
    select * from query_table(cells)
),

agreement as (
    select * from agreement_from(cells := 'long_input')
),

reliability as (
    select * from reliability_from(cells := 'long_input')
),

calibration as (
    select * from calibration_from(cells := 'long_input')
),

thresholds as (
    select * from certainty_split(80, cells := 'long_input')
),

directions as (
    select * from (values
        ('accuracy', true), ('cohen_kappa', true), ('qwk', true), ('macro_f1', true),
        ('kappa_bin_0_123', true), ('kappa_bin_01_23', true), ('kappa_bin_012_3', true),
        ('krippendorff_alpha', true), ('ro', true), ('ru', true), ('hmr', true),
        ('ece', false), ('ace', false), ('mce', false), ('brier', false), ('nll', false), ('th_score', true),
        ('accuracy_confident', true), ('coverage_confident', null)
    ) as directions (metric, is_higher_better)
),

wide as (
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
        agreement.accuracy,
        agreement.cohen_kappa,
        agreement.qwk,
        agreement.macro_f1,
        agreement.kappa_bin_0_123,
        agreement.kappa_bin_01_23,
        agreement.kappa_bin_012_3,
        agreement.krippendorff_alpha,
        reliability.ro,
        reliability.ru,
        reliability.hmr,
        calibration.ece,
        calibration.ace,
        calibration.mce,
        calibration.brier,
        calibration.nll,
        calibration.th_score,
        thresholds.accuracy_confident,
        thresholds.coverage_confident
    from agreement
    inner join reliability using (run_id, personality, cot, confidence_method)
    inner join calibration using (run_id, personality, cot, confidence_method)
    inner join thresholds using (run_id, personality, cot, confidence_method)
),

unpivoted as (
    from wide unpivot include nulls (
        value for metric in (
            accuracy, cohen_kappa, qwk, macro_f1, kappa_bin_0_123, kappa_bin_01_23, kappa_bin_012_3,
            krippendorff_alpha, ro, ru, hmr, ece, ace, mce, brier, nll, th_score, accuracy_confident,
            coverage_confident
        )
    )
),

final as (
    select unpivoted.*, directions.is_higher_better
    from unpivoted
    inner join directions using (metric)
)

select * from final
