-- A pairwise run by name.
select pairwise_run_id, collection_id, subset_name, model, seed, params from pairwise_runs where run_name = $run_name
