-- A run's batches with what came back: `peras batch status`.
with lines as (
    select batch_id, count(*) filter (where status_code = 200) as n_answered, count(*) filter (where status_code is distinct from 200) as n_failed
    from llm_batch_lines
    group by batch_id
),

final as (
    select b.batch_id, b.round, b.status, b.n_requests, coalesce(l.n_answered, 0) as n_answered,
           coalesce(l.n_failed, 0) as n_failed, b.submitted_at, b.collected_at, b.base_url
    from llm_batches as b
    left join lines as l on l.batch_id = b.batch_id
    where b.run_id = $run_id
)

select * from final
order by round, submitted_at, batch_id
