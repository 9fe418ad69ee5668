-- certainty_split(threshold, cells): certainty thresholding at one threshold (default 80), per group, over the
-- judgments with a label and a confidence: accuracy and coverage of those with confidence >= threshold
-- ("confident"), and accuracy of the rest. coverage_confident = n_confident / n_scored_confidence.
-- An accuracy is null when its side is empty; every metric is null when n_scored_confidence = 0.
-- Usage: select * from certainty_split(90)
create or replace macro certainty_split(threshold := 80, cells := 'metrics_cells') as table
with split_input as materialized (
    select * from query_table(cells)
),

groups as (
    select * from groups_from(cells := 'split_input')
),

sides as (
    select
        run_id,
        personality,
        cot,
        confidence_method,
        sum(n_judgments) as n,
        coalesce(sum(n_judgments) filter (where label = relevance), 0) as n_correct,
        coalesce(sum(n_judgments) filter (where confidence >= threshold), 0) as n_confident,
        coalesce(sum(n_judgments) filter (where confidence >= threshold and label = relevance), 0)
            as n_confident_correct,
        coalesce(sum(n_judgments) filter (where confidence < threshold and label = relevance), 0)
            as n_unconfident_correct
    from split_input
    where label is not null and confidence is not null
    group by all
),

final as (
    select
        groups.* exclude (n_scored),
        threshold::double as threshold,
        (sides.n_correct / sides.n)::double as accuracy_all,
        sides.n_confident::bigint as n_confident,
        (case when sides.n_confident > 0 then sides.n_confident_correct / sides.n_confident end)::double
            as accuracy_confident,
        (sides.n_confident / sides.n)::double as coverage_confident,
        (sides.n - sides.n_confident)::bigint as n_unconfident,
        (case when sides.n > sides.n_confident
            then sides.n_unconfident_correct / (sides.n - sides.n_confident) end)::double as accuracy_unconfident
    from groups
    left join sides using (run_id, personality, cot, confidence_method)
)

select * from final
