-- Every judgment stream of a collection that could become feature columns, newest run first.
-- Parameters: collection_id.
with runs as (
    select run_name, created_at from judge_runs
),

streams as (
    select
        run_name,
        source,
        personality,
        cot,
        confidence_method,
        has_confidence,
        count(*) as n_judgments
    from clf_feature_values
    where collection_id = $collection_id
    group by all
),

final as (
    select streams.*, runs.created_at
    from streams
    inner join runs using (run_name)
)

select * from final
order by created_at desc, run_name, personality, cot, confidence_method
