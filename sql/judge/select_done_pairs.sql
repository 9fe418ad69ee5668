-- Pairs of one group (personality, CoT setting, method) of a run that have a stored judgment, with the text_sha
-- it was made on (the plan skips those whose texts have not changed since) and its status (a run resumed with
-- retry_failed plans its failures again).
select query_id, doc_id, text_sha, status
from judgments
where run_id = $run_id and personality = $personality and cot = $cot and confidence_method = $confidence_method
