-- Labels read from a file (assess_new_labels registered: query_id, doc_id, assessor, relevance): an assessor's label
-- of a pair replaces the one they gave before. A delete then an insert (in the caller's transaction), not
-- `insert or replace`: a DuckLake warehouse has no keys to replace by.
delete from assess_labels as l
where l.plan_id = $plan_id
    and exists (
        select 1 from assess_new_labels as n
        where n.query_id = l.query_id and n.doc_id = l.doc_id and n.assessor = l.assessor
    );

insert into assess_labels (plan_id, query_id, doc_id, assessor, relevance, seconds, origin, labelled_at)
select $plan_id, query_id, doc_id, assessor, relevance, null, 'import', $labelled_at
from assess_new_labels
