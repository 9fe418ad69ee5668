-- A set's personas (persona_set_members) by name and version: the latest published version when $version is null;
-- a running build's candidates only when $running (its own check rounds).
select m.set_id, m.version, m.condition, m.personality, m.instruction
from persona_set_members as m
where m.set_name = $set_name
  and m.version = coalesce($version, (
      select max(version) from persona_sets where set_name = $set_name and status = 'published'
  ))
  and (m.status = 'published' or $running)
order by m.condition
