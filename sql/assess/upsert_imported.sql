-- Labels read from a file (assess_new_labels registered: query_id, doc_id, assessor, relevance): an assessor's label
-- of a pair replaces the one they gave before.
insert or replace into assess_labels (plan_id, query_id, doc_id, assessor, relevance, seconds, origin, labelled_at)
select $plan_id, query_id, doc_id, assessor, relevance, null, 'import', $labelled_at
from assess_new_labels
