-- threshold_curve_from(cells): the accuracy/coverage curve of certainty thresholding. For each threshold
-- t = 0, 5, ..., 100: the judgments with confidence >= t (n_covered), their share of the group's judgments with
-- a label and a confidence (coverage; null when there are none) and their accuracy (null when none is covered).
-- 21 rows per group.
create or replace macro threshold_curve_from(cells := 'metrics_cells') as table
with curve_input as materialized (
    select * from query_table(cells)
),

groups as (
    select * from groups_from(cells := 'curve_input')
),

scored as (
    select * from confidence_counts_from(cells := 'curve_input')
),

-- running totals from the most confident down: judgments at or above each distinct confidence
from_top as (
    select
        scored.* exclude (n, n_correct),
        sum(n) over downward as n_at_or_above,
        sum(n_correct) over downward as n_correct_at_or_above
    from scored
    window downward as (
        partition by run_id, personality, cot, confidence_method order by confidence desc
        rows between unbounded preceding and current row
    )
),

grid as (
    select
        groups.* exclude (n_judgments, n_label_failures, n_confidence_missing, n_scored, n_scored_confidence),
        unnest(range(0, 101, 5))::double as threshold,
        groups.n_scored_confidence
    from groups
),

-- the least confidence >= t carries the totals of every judgment at or above t
covered as (
    select
        grid.run_id,
        grid.personality,
        grid.cot,
        grid.confidence_method,
        grid.threshold,
        coalesce(from_top.n_at_or_above, 0) as n_covered,
        coalesce(from_top.n_correct_at_or_above, 0) as n_covered_correct
    from grid
    asof left join from_top
        on grid.run_id = from_top.run_id
        and grid.personality = from_top.personality
        and grid.cot = from_top.cot
        and grid.confidence_method = from_top.confidence_method
        and grid.threshold <= from_top.confidence
),

final as (
    select
        grid.*,
        covered.n_covered::bigint as n_covered,
        (case when grid.n_scored_confidence > 0 then covered.n_covered / grid.n_scored_confidence end)::double
            as coverage,
        (case when covered.n_covered > 0 then covered.n_covered_correct / covered.n_covered end)::double
            as accuracy
    from grid
    inner join covered using (run_id, personality, cot, confidence_method, threshold)
)

select * from final
