-- summary_from(cells): what a reader wants first about each group, one row: how many judgments were scored,
-- agreement with the human qrels (cohen_kappa, qwk, macro_f1 of agreement_from) and the confidence's reliability
-- and calibration (hmr of reliability_from, ece of calibration_from). Nothing is computed here: the values are
-- those macros', joined (group_metrics_from); `peras metrics` prints this by default and the other views with --view.
create or replace macro summary_from(cells := 'metrics_cells') as table
with group_metrics as (
    select * from group_metrics_from(cells := cells)
),

final as (
    select
        run_id, run_name, source, collection_id, subset_name, model, personality, cot, confidence_method,
        n_judgments,
        n_label_failures,
        n_scored,
        cohen_kappa,
        qwk,
        macro_f1,
        hmr,
        ece
    from group_metrics
)

select * from final
