-- A plan's human labels, one row per pair x assessor.
select query_id, doc_id, assessor, relevance, seconds, origin, labelled_at
from assess_labels
where plan_id = $plan_id
order by query_id, doc_id, assessor
