-- Record the personality conditions with their exact instruction text (staged_personalities): a condition whose
-- text changed is replaced, one already stored as it is is left alone (no write: runs on several hosts at once
-- store the same conditions without conflicting; written without a key, which a DuckLake warehouse has none of).
delete from personalities as p
where exists (
    select 1 from staged_personalities as s
    where s.personality = p.personality
      and (s.name, s.trait, s.pole, s.instruction, s.source)
          is distinct from (p.name, p.trait, p.pole, p.instruction, p.source)
);

insert into personalities (personality, name, trait, pole, instruction, source)
select s.personality, s.name, s.trait, s.pole, s.instruction, s.source
from staged_personalities as s
where not exists (select 1 from personalities as p where p.personality = s.personality)
