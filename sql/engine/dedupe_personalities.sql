-- On a DuckLake warehouse (no keys) two runs recording the same new personality at once both insert it: keep one
-- row per personality of staged_personalities (the copies are identical: the same code and text). One
-- transaction; retried on conflict.
create or replace temp table personality_copies as
select distinct p.*
from personalities as p
where p.personality in (
    select personality from personalities
    where personality in (select personality from staged_personalities)
    group by personality
    having count(*) > 1
);

delete from personalities where personality in (select personality from personality_copies);

insert into personalities
select * from personality_copies
qualify row_number() over (partition by personality order by instruction, source) = 1
