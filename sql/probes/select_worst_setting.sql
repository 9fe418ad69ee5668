-- The setting of one run an attack fools most often (highest success rate, then most successes), among settings
-- with something attackable.
select kind, personality, cot, confidence_method, n_attackable, n_success, attack_success_rate
from probe_measures
where run_id = $run_id and role = 'attack' and n_attackable > 0
order by attack_success_rate desc, n_success desc, kind, personality, cot, confidence_method
limit 1
