-- A plan's pairs in the order picked, with the query and passage texts and the judge run's label.
select pairs.query_id, pairs.doc_id, pairs.pick_order, pairs.pick_score, pairs.llm_label,
    queries.text as query_text, passages.text as passage_text
from assess_pairs as pairs
inner join assess_plans as plans using (plan_id)
left join queries on queries.collection_id = plans.collection_id and queries.query_id = pairs.query_id
left join passages on passages.collection_id = plans.collection_id and passages.doc_id = pairs.doc_id
where pairs.plan_id = $plan_id
order by pairs.pick_order
