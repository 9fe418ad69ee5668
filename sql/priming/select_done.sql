-- Batches of a run that already have a stored outcome (scores or a recorded failure).
select query_id, trial, n_prologue, n_epilogue, personality, condition
from priming_batches
where priming_run_id = $priming_run_id
