-- Give one judge run another name, in the caller's transaction. An imported run also gets a new run_id
-- ($new_run_id): imports derive their id from the name, and the old name must stay free for a new import.
-- A run judged here keeps its id ($new_run_id = $run_id), so its shards and requests stay attached.
update judgments set run_id = $new_run_id where run_id = $run_id and $new_run_id <> $run_id;

update judgment_history set run_id = $new_run_id where run_id = $run_id and $new_run_id <> $run_id;

update import_reports set run_id = $new_run_id, run_name = $new_name where run_id = $run_id;

update judge_runs set run_id = $new_run_id, run_name = $new_name where run_id = $run_id
