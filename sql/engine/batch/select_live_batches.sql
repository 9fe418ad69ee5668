-- The live batches of a model at one Batch API, whichever run submitted them (two runs needing one request share
-- its batch, so either run's collection serves both).
select batch_id, run_id, status
from llm_batches
where model = $model and base_url = $base_url and collected_at is null
order by submitted_at, batch_id
