-- The pairs a budget adds to a plan (assess_new_pairs registered: query_id, doc_id, pick_order, pick_score, llm_label).
insert into assess_pairs (plan_id, query_id, doc_id, pick_order, pick_score, llm_label, added_at)
select $plan_id, query_id, doc_id, pick_order, pick_score, llm_label, $added_at
from assess_new_pairs
