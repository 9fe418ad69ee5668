-- After a round's check: each candidate it checked (the latest readable build of its condition, not yet judged)
-- gets its comparison's verdict from persona_fidelity.
update persona_set_builds as b
set check_run_name = f.run_name, is_faithful = coalesce(f.is_pass, false), effect_size = f.effect_size,
    effect_ci_low = f.effect_ci_low
from persona_fidelity as f
where b.set_id = $set_id and b.check_run_name is null and b.status = 'ok'
  and f.run_name = $check_run_name and b.personality in (f.upper_personality, f.lower_personality)
  and b.round = (
      select max(l.round) from persona_set_builds as l
      where l.set_id = b.set_id and l.condition = b.condition and l.status = 'ok'
  )
