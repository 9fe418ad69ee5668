-- Every judge run (judged here or imported), or those of one collection, with how many judgments it holds: the
-- override `peras runs list` shows judge runs with (the collection, subset and source every other stage lacks).
with wanted_runs as (
    select run_id, run_name, source, collection_id, subset_name, model, status, created_at
    from judge_runs
    where $collection_id is null or collection_id = $collection_id
),

judgment_counts as (
    select run_id, count(*) as n_judgments, count(*) filter (where status <> 'ok') as n_failures
    from judgments
    where run_id in (select run_id from wanted_runs)
    group by run_id
),

final as (
    select
        r.run_name,
        r.collection_id,
        r.subset_name,
        r.model,
        r.source,
        r.status,
        coalesce(c.n_judgments, 0) as n_judgments,
        coalesce(c.n_failures, 0) as n_failures,
        r.created_at
    from wanted_runs as r
    left join judgment_counts as c on c.run_id = r.run_id
)

select * from final order by created_at, run_name
