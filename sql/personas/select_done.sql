-- Answers of a check run that already have a stored outcome (a number or a recorded failure), with its status (a
-- run resumed with retry_failed plans its failures again).
select personality, item_id, sample_index, status
from persona_answers
where check_run_id = $run_id
