-- A pair given to an assessor (is_skipped: they skipped it; the claim stays, so it is not given to them again).
-- A delete then an insert (in the caller's transaction), not `insert or replace`: a DuckLake warehouse has no keys
-- to replace by.
delete from assess_claims
where plan_id = $plan_id and query_id = $query_id and doc_id = $doc_id and assessor = $assessor;

insert into assess_claims (plan_id, query_id, doc_id, assessor, is_skipped, claimed_at)
values ($plan_id, $query_id, $doc_id, $assessor, $is_skipped, $claimed_at)
