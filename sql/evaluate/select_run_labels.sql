-- A judge run's labels for one CoT setting and confidence method: every personality's, failures left out.
select query_id, doc_id, personality, label::bigint as label, confidence
from judgments
where run_id = $run_id and cot = $cot and confidence_method = $confidence_method and label is not null
order by query_id, doc_id, personality
