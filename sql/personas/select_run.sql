-- A personas check run by name.
select check_run_id, personality_set, model, n_samples, sample_temperature, seed, params
from persona_check_runs
where run_name = $run_name
