-- confidence_counts_from(cells): per group and distinct confidence, how many judgments have a label and that
-- confidence (n) and how many of those are correct (label = relevance, n_correct): what the metrics that
-- threshold or bin the confidence (threshold_curve_from, calibration_from) start from. Label failures and
-- judgments without a confidence are not counted here (groups_from counts them).
create or replace macro confidence_counts_from(cells := 'metrics_cells') as table
with confidence_counts_input as (
    select * from query_table(cells)
    where label is not null and confidence is not null
),

final as (
    select
        run_id,
        personality,
        cot,
        confidence_method,
        confidence,
        sum(n_judgments) as n,
        coalesce(sum(n_judgments) filter (where label = relevance), 0) as n_correct
    from confidence_counts_input
    group by all
)

select * from final
