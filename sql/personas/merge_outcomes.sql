-- Merge staged BFI-2 answers (requests are merged first), each as outcome_action says (sql/engine/views):
-- dropped if it contradicts its stored request, kept if stored, replaced if a stored failure was asked again (the old
-- one kept in persona_answer_history), else new. Returns the number left out.
create or replace temp table outcome_merge as
select
    s.*,
    outcome_action(
        s.request_parse_status, s.status, s.judged_at, a.check_run_id is not null, a.status, a.answered_at
    ) as action
from staged_checked as s
left join persona_answers as a
    on a.check_run_id = s.run_id and a.personality = s.personality and a.item_id = s.item_id
   and a.sample_index = s.sample_index;

insert into persona_answer_history
select a.check_run_id, a.personality, a.item_id, a.sample_index, a.answer, a.status, a.reason, a.request_id,
       a.answered_at, $replaced_at, m.action
from persona_answers as a
inner join outcome_merge as m
    on m.run_id = a.check_run_id and m.personality = a.personality and m.item_id = a.item_id
   and m.sample_index = a.sample_index
where m.action = 'failure asked again';

delete from persona_answers as a
using outcome_merge as m
where m.action = 'failure asked again'
  and m.run_id = a.check_run_id and m.personality = a.personality and m.item_id = a.item_id
  and m.sample_index = a.sample_index;

insert into persona_answers (
    check_run_id, personality, item_id, sample_index, answer, status, reason, request_id, answered_at
)
select run_id, personality, item_id, sample_index, answer, status, reason, request_id, judged_at
from outcome_merge
where action in ('new', 'failure asked again');

select count(*) from outcome_merge where action = 'drop'
