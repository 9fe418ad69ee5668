-- The pair the page gave this assessor and they have neither labelled nor skipped (after an undo, or a reload):
-- it comes again before any new one.
select pairs.query_id, pairs.doc_id
from assess_pairs as pairs
inner join assess_claims as claims using (plan_id, query_id, doc_id)
left join assess_labels as labels
    on labels.plan_id = pairs.plan_id and labels.query_id = pairs.query_id and labels.doc_id = pairs.doc_id
    and labels.assessor = claims.assessor
where pairs.plan_id = $plan_id and claims.assessor = $assessor and not claims.is_skipped and labels.relevance is null
order by pairs.pick_order
limit 1
