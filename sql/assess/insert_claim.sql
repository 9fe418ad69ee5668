-- A pair given to an assessor ($is_skipped: they skipped it; the claim stays, so it is not given to them again).
insert or replace into assess_claims (plan_id, query_id, doc_id, assessor, is_skipped, claimed_at)
values ($plan_id, $query_id, $doc_id, $assessor, $is_skipped, $claimed_at)
