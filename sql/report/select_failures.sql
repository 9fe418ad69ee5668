-- Parse failures per run and setting (CoT x confidence method), summed over personalities, next to the largest
-- share any one personality had (the judge gate's threshold applies per personality). n_confidence_missing is
-- null for confidence method 'none', which asks for no confidence.
with groups as (
    select * from groups_from(cells := 'metric_cells_snapshot')
),

final as (
    select
        run_name,
        collection_id,
        model,
        cot,
        confidence_method,
        sum(n_judgments)::bigint as n_judgments,
        sum(n_label_failures)::bigint as n_label_failures,
        sum(n_confidence_missing) filter (where confidence_method <> 'none')::bigint as n_confidence_missing,
        max(n_label_failures / n_judgments)::double as max_label_failure_share
    from groups
    group by all
)

select * from final
order by collection_id, model, run_name, cot, confidence_method
