-- The run that holds this name now, if any: its id, source and the fingerprint of what it was imported from.
select run_id, source, params ->> 'fingerprint' as fingerprint
from judge_runs
where run_name = $run_name
