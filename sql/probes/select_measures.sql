-- One run's probe measures, attacks first, then controls; kinds, settings in a fixed order.
select
    kind,
    role,
    personality,
    cot,
    confidence_method,
    n_copies,
    n_attackable,
    n_success,
    attack_success_rate,
    mean_label_shift_targets,
    mean_label_shift_relevant,
    label_change_rate,
    mean_confidence_shift,
    auroc_low_confidence,
    auroc_disagreement
from probe_measures
where run_id = $run_id
order by role, kind, personality, cot, confidence_method
