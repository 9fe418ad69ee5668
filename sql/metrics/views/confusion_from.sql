-- confusion_from(cells): the 4x4 confusion matrix of each group, long: human relevance x judge label ->
-- n_judgments. All 16 cells are present (zeros included), so a matrix can be pivoted without gaps.
-- Label parse failures are not a cell: metrics_agreement counts them in n_label_failures.
create or replace macro confusion_from(cells := 'metrics_cells') as table
with confusion_input as materialized (
    select * from query_table(cells)
),

groups as (
    select * from groups_from(cells := 'confusion_input')
),

labelled as (
    select run_id, personality, cot, confidence_method, relevance, label, sum(n_judgments) as n_judgments
    from confusion_input
    where label is not null
    group by all
),

levels as (
    select unnest(range(4))::integer as level
),

grid as (
    select
        groups.* exclude (n_judgments, n_label_failures, n_confidence_missing, n_scored, n_scored_confidence),
        truth.level as relevance,
        judged.level as label
    from groups
    cross join levels as truth
    cross join levels as judged
),

final as (
    select
        grid.*,
        coalesce(labelled.n_judgments, 0)::bigint as n_judgments
    from grid
    left join labelled using (run_id, personality, cot, confidence_method, relevance, label)
)

select * from final
