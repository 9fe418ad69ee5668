-- Collected answers (and failed lines) of the model's batches for requests that have no readable answer stored yet:
-- the engine answers from them as it answers from the server. Oldest first: a request's attempts in order.
-- A call that retries failures ($since: when it started; null otherwise) leaves out what was collected before it
-- of a request that failed (its failed lines, and every line of a request stored as a failure): those lines are
-- asked again, as an online retry asks the failed requests again.
with answered as (
    select request_id from llm_requests where model = $model and parse_status = 'ok'
),

stored_failures as (
    select request_id from llm_requests where model = $model and parse_status <> 'ok'
),

final as (
    select l.request_id, l.attempt, l.status_code, l.body, l.error_code, l.error_message, l.collected_at
    from llm_batch_lines as l
    inner join llm_batches as b on b.batch_id = l.batch_id
    where b.model = $model and l.request_id not in (select request_id from answered)
        and (
            $since::timestamp is null
            or l.collected_at >= $since::timestamp
            or (l.status_code = 200 and l.request_id not in (select request_id from stored_failures))
        )
)

select * from final
order by request_id, attempt, collected_at
