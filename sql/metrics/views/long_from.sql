-- long_from(cells): every headline metric of every group as one row (group, metric, value), the shape that
-- comparisons across personalities need. is_higher_better gives the metric's direction (null: descriptive, such
-- as coverage, which no side wins). accuracy is agreement's (over every judgment with a label);
-- accuracy_confident and coverage_confident are certainty_split(80)'s. Null values are kept.
-- The judgments are scanned once (group_metrics_from).
create or replace macro long_from(cells := 'metrics_cells') as table
with group_metrics as (
    select * from group_metrics_from(cells := cells)
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
        run_id, run_name, source, collection_id, subset_name, model, personality, cot, confidence_method,
        accuracy,
        cohen_kappa,
        qwk,
        macro_f1,
        kappa_bin_0_123,
        kappa_bin_01_23,
        kappa_bin_012_3,
        krippendorff_alpha,
        ro,
        ru,
        hmr,
        ece,
        ace,
        mce,
        brier,
        nll,
        th_score,
        accuracy_confident,
        coverage_confident
    from group_metrics
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
