-- Delete one judge run, its judgments, its fan-out beats, attempts and lease, in the caller's transaction. The LLM
-- answers it asked for stay in llm_requests (and llm_request_history): they are the request cache, and another run
-- may share them.
delete from judgments where run_id = $run_id;

delete from judgment_history where run_id = $run_id;

delete from import_reports where run_id = $run_id;

delete from judge_part_beats where run_id = $run_id;

delete from run_attempts where kind = 'judge' and run_id = $run_id;

delete from run_leases where kind = 'judge' and run_id = $run_id;

delete from judge_runs where run_id = $run_id
