-- Merge staged answers (requests are merged first). Why: an answer must agree with the stored request it
-- references (a number only from an answer that read, a failure only from one that did not, an error only from a
-- refusal); one that does not (a concurrent run stored another answer first) is left out and asked again from the
-- stored answer. Stored answers are kept, except a stored failure asked again (retry_failed), which is replaced.
-- Returns the number left out.
create or replace temp table outcome_merge as
select
    s.*,
    case
        when r.request_id is null then 'drop'
        when s.status = 'ok' and r.parse_status <> 'ok' then 'drop'
        when s.status = 'parse_failure' and r.parse_status <> 'parse_failure' then 'drop'
        when s.status = 'error' and r.parse_status <> 'refused' then 'drop'
        when a.status <> 'ok' and s.judged_at > a.answered_at then 'failure asked again'
        when a.check_run_id is not null then 'keep'
        else 'new'
    end as action
from staged_outcomes as s
left join llm_requests as r on r.request_id = s.request_id
left join persona_answers as a
    on a.check_run_id = s.run_id and a.personality = s.personality and a.item_id = s.item_id
   and a.sample_index = s.sample_index;

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
