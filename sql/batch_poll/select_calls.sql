-- The batch-mode runs to call again: still waiting (their last call found items waiting), none of their own batches
-- live, and some batch of their model at their Batch API collected since that call (theirs, or another run's that
-- holds their requests).
select c.run_id, c.kind, c.flow_name, c.parameters::varchar as parameters, c.base_url, c.model
from llm_batch_calls as c
where
    c.finished_at is null
    and not exists (select 1 from llm_batches as b where b.run_id = c.run_id and b.collected_at is null)
    and exists (
        select 1 from llm_batches as b
        where b.model = c.model and b.base_url = c.base_url and b.collected_at >= c.recorded_at
    )
order by c.recorded_at, c.run_id
