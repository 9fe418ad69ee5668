-- Collected answers (and failed lines) of the model's batches for requests that have no readable answer stored yet:
-- the engine answers from them as it answers from the server. Oldest first: a request's attempts in order.
with answered as (
    select request_id from llm_requests where model = $model and parse_status = 'ok'
),

final as (
    select l.request_id, l.attempt, l.status_code, l.body, l.error_code, l.error_message, l.collected_at
    from llm_batch_lines as l
    inner join llm_batches as b on b.batch_id = l.batch_id
    where b.model = $model and l.request_id not in (select request_id from answered)
)

select * from final
order by request_id, attempt, collected_at
