-- summary_from(cells): what a reader wants first about each group, one row: how many judgments were scored,
-- agreement with the human qrels (cohen_kappa, qwk, macro_f1 of agreement_from) and the confidence's reliability
-- and calibration (hmr of reliability_from, ece of calibration_from). Nothing is computed here: the values are
-- those macros', joined; `peras metrics` prints this by default and the other views with --view.
create or replace macro summary_from(cells := 'metrics_cells') as table
with summary_input as materialized (
    select * from query_table(cells)
),

agreement as (
    select * from agreement_from(cells := 'summary_input')
),

reliability as (
    select * from reliability_from(cells := 'summary_input')
),

calibration as (
    select * from calibration_from(cells := 'summary_input')
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
        agreement.n_scored,
        agreement.cohen_kappa,
        agreement.qwk,
        agreement.macro_f1,
        reliability.hmr,
        calibration.ece
    from agreement
    inner join reliability using (run_id, personality, cot, confidence_method)
    inner join calibration using (run_id, personality, cot, confidence_method)
)

select * from final
