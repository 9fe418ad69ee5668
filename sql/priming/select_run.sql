-- A priming run by name.
select priming_run_id, collection_id, model, seed, params from priming_runs where run_name = $run_name
