-- Batches of a run that already have a stored outcome (scores or a recorded failure), with its status (a run
-- resumed with retry_failed plans its failures again).
select query_id, trial, n_prologue, n_epilogue, personality, condition, status
from priming_batches
where priming_run_id = $run_id
