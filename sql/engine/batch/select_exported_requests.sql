-- The lines of a run's exported batches (vLLM run-batch input files): written by `peras batch export`, and what
-- `peras batch import` matches output lines against.
select b.batch_id, q.custom_id, q.request_id, q.attempt, q.body, b.collected_at is not null as is_collected
from llm_batch_requests as q
inner join llm_batches as b on b.batch_id = q.batch_id
where b.run_id = $run_id and b.base_url is null
order by b.submitted_at, b.batch_id, q.custom_id
