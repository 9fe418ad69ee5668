-- What a batch-mode run has spent of its --request-budget: every line its batches were submitted with (the provider
-- may run each), plus the HTTP requests its online attempts sent for requests it never put in a batch.
with batched as (
    select q.request_id
    from llm_batch_requests as q
    inner join llm_batches as b on b.batch_id = q.batch_id
    where b.run_id = $run_id
),

online as (
    select request_id, http_requests from llm_requests where run_id = $run_id
    union all
    select request_id, http_requests from llm_request_history where run_id = $run_id
)

select
    (select count(*) from batched)
    + (
        select coalesce(sum(http_requests), 0) from online
        where request_id not in (select request_id from batched)
    ) as spent
