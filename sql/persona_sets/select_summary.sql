-- One line per condition of a build: its persona, the rounds it took and its fidelity.
select condition, personality, rounds, chosen_round, keywords, is_faithful, effect_size, effect_ci_low, instruction
from persona_set_members
where set_id = $set_id
order by condition
