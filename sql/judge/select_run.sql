-- A judge run by name.
select run_id, collection_id, subset_name, model, params, status from judge_runs where run_name = $run_name
