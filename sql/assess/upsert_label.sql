-- A label given on the page, written at once: an assessor's new label of a pair replaces their old one.
insert or replace into assess_labels (plan_id, query_id, doc_id, assessor, relevance, seconds, origin, labelled_at)
values ($plan_id, $query_id, $doc_id, $assessor, $relevance, $seconds, 'page', $labelled_at)
