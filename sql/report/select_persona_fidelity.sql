-- The pass/fail table of every published personas check run (persona_fidelity), per set and model: runs by name,
-- traits in O C E A N order, high_vs_default before default_vs_low.
select run_name, model, personality_set, trait, comparison, upper_personality, lower_personality, upper_score,
       lower_score, effect_size, effect_ci_low, effect_ci_high, is_pass
from persona_fidelity
order by run_name, position(left(trait, 1) in 'OCEAN'), comparison desc
