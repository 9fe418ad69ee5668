-- Planned batches (priming_planned) of a run whose outcome is a failure rather than scores.
select count(*) as n_failures
from priming_batches as b
inner join priming_planned as p using (query_id, trial, n_prologue, n_epilogue, personality, condition)
where b.priming_run_id = $priming_run_id and b.status != 'ok'
