-- One recognize run's pole accuracy, shifts and control.
select n_personas, n_recognised, accuracy, mean_shift, mean_off_target_shift, default_share_uncertain,
    is_default_mostly_uncertain
from recognize_accuracy
where run_name = $run_name
