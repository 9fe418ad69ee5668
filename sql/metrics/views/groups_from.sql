-- groups_from(cells): one row per metric group with its judgment counts, the rows every metric reports on.
-- cells names a relation shaped like metrics_cells (a view, a table or a CTE of the calling query): analysts can
-- pass a filtered copy, e.g. `with c as (select * from metrics_cells where cot) select * from groups_from('c')`.
-- n_scored counts the judgments with a label (the agreement metrics score these); n_scored_confidence those
-- that also carry a confidence (reliability, calibration and thresholds score these). Failures are not scored.
create or replace macro groups_from(cells := 'metrics_cells') as table
with groups_input as (
    select * from query_table(cells)
),

final as (
    select
        run_id, run_name, source, collection_id, subset_name, model, personality, cot, confidence_method,
        sum(n_judgments)::bigint as n_judgments,
        coalesce(sum(n_judgments) filter (where label is null), 0)::bigint as n_label_failures,
        coalesce(sum(n_judgments) filter (where label is not null and confidence is null), 0)::bigint
            as n_confidence_missing,
        coalesce(sum(n_judgments) filter (where label is not null), 0)::bigint as n_scored,
        coalesce(sum(n_judgments) filter (where label is not null and confidence is not null), 0)::bigint
            as n_scored_confidence
    from groups_input
    group by all
)

select * from final
