-- Items of a run that already have a stored answer (a verdict or a recorded failure), with its status (a run
-- resumed with retry_failed plans its failures again).
select query_id, doc_1, doc_2, personality, prompt, position, status
from pairwise_answers
where pairwise_run_id = $run_id
