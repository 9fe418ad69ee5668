-- A label given on the page, written at once: an assessor's new label of a pair replaces their old one. A delete
-- then an insert (in the caller's transaction), not `insert or replace`: a DuckLake warehouse has no keys to
-- replace by.
delete from assess_labels
where plan_id = $plan_id and query_id = $query_id and doc_id = $doc_id and assessor = $assessor;

insert into assess_labels (plan_id, query_id, doc_id, assessor, relevance, seconds, origin, labelled_at)
values ($plan_id, $query_id, $doc_id, $assessor, $relevance, $seconds, 'page', $labelled_at)
