-- The pass/fail table of one check run (persona_fidelity), traits in O C E A N order.
select trait, comparison, upper_personality, lower_personality, upper_score, lower_score, difference, pooled_sd,
       effect_size, effect_ci_low, effect_ci_high, is_pass
from persona_fidelity
where run_name = $run_name
order by position(left(trait, 1) in 'OCEAN'), comparison desc
