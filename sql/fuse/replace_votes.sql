-- Store a run's judges and the baselines' votes on its pairs, replacing what an earlier call stored (the same judge
-- streams give the same votes unless a judge run changed). fuse_new_judges and fuse_new_votes are registered by the
-- caller; run in one transaction.
delete from fuse_judges where fuse_run_id = $fuse_run_id;
delete from fuse_votes where fuse_run_id = $fuse_run_id;

insert into fuse_judges (fuse_run_id, judge, judge_index, run_name, personality, cot, confidence_method)
select $fuse_run_id, judge, judge_index, run_name, personality, cot, confidence_method from fuse_new_judges;

insert into fuse_votes (fuse_run_id, query_id, doc_id, relevance, method, label, confidence)
select $fuse_run_id, query_id, doc_id, relevance, method, label, confidence from fuse_new_votes
