-- A recognize run's readings of the check set that read (a level): what the evidence judge scores.
select query_id as text_id, dimension, analysis, coalesce(evidence, []) as evidence
from recognize_states
where recognize_run_id = $run_id and personality = 'check-set' and level is not null
order by text_id, dimension
