-- Pairs of a run that already have a stored fuser answer (a verdict or a recorded failure), with its status (a run
-- resumed with retry_failed plans its failures again).
select query_id, doc_id, status from fuse_answers where fuse_run_id = $run_id
