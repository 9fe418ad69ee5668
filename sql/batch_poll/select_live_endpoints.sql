-- The Batch APIs and models that hold live batches (exported files for vLLM's run-batch are not polled), and how
-- many live batches each holds.
select base_url, model, count(*) as n_live
from llm_batches
where collected_at is null and base_url is not null
group by base_url, model
order by base_url, model
