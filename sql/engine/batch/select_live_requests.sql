-- Requests (and which attempt) of the model that are in a live batch, whichever run submitted it: they are never
-- submitted again while it lives.
select q.request_id, q.attempt
from llm_batch_requests as q
inner join llm_batches as b on b.batch_id = q.batch_id
where b.model = $model and b.collected_at is null
