-- Merge staged builds (requests are merged first) by the engine's outcome_action: a build must agree with the
-- stored request of its last step; one that does not (a concurrent run stored another answer first) is left out and
-- built again from the stored answers. A stored build is kept, except a stored failure built again later, which is
-- replaced. Returns the number left out.
create or replace temp table outcome_merge as
select
    s.*,
    outcome_action(
        s.request_parse_status, s.status, s.judged_at, b.set_id is not null, b.status, b.built_at
    ) as action
from staged_checked as s
left join persona_set_builds as b on b.set_id = s.run_id and b.condition = s.condition and b.round = s.round;

delete from persona_set_builds as b
using outcome_merge as m
where m.action = 'failure asked again' and m.run_id = b.set_id and m.condition = b.condition and m.round = b.round;

insert into persona_set_builds (
    set_id, condition, round, personality, keywords_raw, keywords, instruction_raw, instruction,
    keywords_request_id, instruction_request_id, status, reason, built_at
)
select run_id, condition, round, personality, keywords_raw, keywords, instruction_raw, instruction,
       keywords_request_id, instruction_request_id, status, reason, judged_at
from outcome_merge
where action in ('new', 'failure asked again');

select count(*) from outcome_merge where action = 'drop'
