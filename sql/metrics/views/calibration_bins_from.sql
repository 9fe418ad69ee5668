-- calibration_bins_from(cells): reliability-diagram bins, 10 equal-width confidence bins per group:
-- [0,10), [10,20), ..., [90,100] (100 falls in the last bin), with the judgments in each, their mean
-- p = confidence / 100, their accuracy (label = relevance) and gap = mean_p - accuracy (> 0: overconfident).
-- Empty bins are kept (n_judgments 0, mean_p and accuracy null): every group has bins 0..9.
-- Over judgments with a label and a confidence; ece and mce in metrics_calibration use these same bins.
create or replace macro calibration_bins_from(cells := 'metrics_cells') as table
with bins_input as materialized (
    select * from query_table(cells)
),

groups as (
    select * from groups_from(cells := 'bins_input')
),

bins as (
    select
        run_id,
        personality,
        cot,
        confidence_method,
        least(floor(confidence / 10), 9)::integer as bin,
        sum(n_judgments) as n,
        coalesce(sum(n_judgments) filter (where label = relevance), 0) as n_correct,
        sum(n_judgments * confidence / 100) as sum_p
    from bins_input
    where label is not null and confidence is not null
    group by all
),

grid as (
    select
        groups.* exclude (n_judgments, n_label_failures, n_confidence_missing, n_scored, n_scored_confidence),
        unnest(range(10))::integer as bin
    from groups
),

final as (
    select
        grid.*,
        10 * grid.bin as confidence_lower,
        10 * grid.bin + 10 as confidence_upper,
        coalesce(bins.n, 0)::bigint as n_judgments,
        coalesce(bins.n_correct, 0)::bigint as n_correct,
        (bins.sum_p / bins.n)::double as mean_p,
        (bins.n_correct / bins.n)::double as accuracy,
        (bins.sum_p / bins.n - bins.n_correct / bins.n)::double as gap
    from grid
    left join bins using (run_id, personality, cot, confidence_method, bin)
)

select * from final
