-- The round a run's next submission is: one past its last.
select coalesce(max(round), 0) + 1 as next_round
from llm_batches
where run_id = $run_id
