-- Merge staged batch outcomes (requests are merged first). Why: an outcome must agree with the stored request it
-- references (scores only from an answer that read, a failure only from one that did not, an error only from a
-- refusal); one that does not (a concurrent run stored another answer first) is left out and asked again from
-- the stored answer. Stored batches are kept. Returns the number left out.
create or replace temp table outcome_merge as
select
    s.*,
    case
        when r.request_id is null then 'drop'
        when s.status = 'ok' and r.parse_status <> 'ok' then 'drop'
        when s.status = 'parse_failure' and r.parse_status <> 'parse_failure' then 'drop'
        when s.status = 'error' and r.parse_status <> 'refused' then 'drop'
        when b.priming_run_id is not null then 'keep'
        else 'new'
    end as action
from staged_outcomes as s
left join llm_requests as r on r.request_id = s.request_id
left join priming_batches as b
    on b.priming_run_id = s.run_id and b.query_id = s.query_id and b.trial = s.trial
   and b.n_prologue = s.n_prologue and b.n_epilogue = s.n_epilogue and b.personality = s.personality
   and b.condition = s.condition;

insert into priming_batches (
    priming_run_id, query_id, trial, n_prologue, n_epilogue, personality, condition, doc_ids, scores, status,
    reason, request_id, judged_at
)
select
    run_id, query_id, trial, n_prologue, n_epilogue, personality, condition, doc_ids, scores, status, reason,
    request_id, judged_at
from outcome_merge
where action = 'new';

select count(*) from outcome_merge where action = 'drop'
