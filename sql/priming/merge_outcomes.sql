-- Merge staged batch outcomes (requests are merged first), each as outcome_action says (sql/engine/views):
-- dropped if it contradicts its stored request, kept if stored, replaced if a stored failure was asked again (the old
-- one kept in priming_batch_history), else new. Returns the number left out.
create or replace temp table outcome_merge as
select
    s.*,
    outcome_action(
        s.request_parse_status, s.status, s.judged_at, b.priming_run_id is not null, b.status, b.judged_at
    ) as action
from staged_checked as s
left join priming_batches as b
    on b.priming_run_id = s.run_id and b.query_id = s.query_id and b.trial = s.trial
   and b.n_prologue = s.n_prologue and b.n_epilogue = s.n_epilogue and b.personality = s.personality
   and b.condition = s.condition;

insert into priming_batch_history
select b.priming_run_id, b.query_id, b.trial, b.n_prologue, b.n_epilogue, b.personality, b.condition, b.doc_ids,
       b.scores, b.status, b.reason, b.request_id, b.judged_at, $replaced_at, m.action
from priming_batches as b
inner join outcome_merge as m
    on m.run_id = b.priming_run_id and m.query_id = b.query_id and m.trial = b.trial
   and m.n_prologue = b.n_prologue and m.n_epilogue = b.n_epilogue and m.personality = b.personality
   and m.condition = b.condition
where m.action = 'failure asked again';

delete from priming_batches as b
using outcome_merge as m
where m.action = 'failure asked again'
  and m.run_id = b.priming_run_id and m.query_id = b.query_id and m.trial = b.trial
  and m.n_prologue = b.n_prologue and m.n_epilogue = b.n_epilogue and m.personality = b.personality
  and m.condition = b.condition;

insert into priming_batches (
    priming_run_id, query_id, trial, n_prologue, n_epilogue, personality, condition, doc_ids, scores, status,
    reason, request_id, judged_at
)
select
    run_id, query_id, trial, n_prologue, n_epilogue, personality, condition, doc_ids, scores, status, reason,
    request_id, judged_at
from outcome_merge
where action in ('new', 'failure asked again');

select count(*) from outcome_merge where action = 'drop'
