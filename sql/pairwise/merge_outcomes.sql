-- Merge staged pairwise answers (requests are merged first). Why: an answer must agree with the stored request it
-- references (a verdict only from an answer that read, a failure only from one that did not, an error only from a
-- refusal); one that does not (a concurrent run stored another answer first) is left out and asked again from the
-- stored answer. Stored answers are kept, except a stored failure asked again (retry_failed): it is replaced and
-- kept in pairwise_answer_history. Returns the number left out.
create or replace temp table outcome_merge as
select
    s.*,
    case
        when r.request_id is null then 'drop'
        when s.status = 'ok' and r.parse_status <> 'ok' then 'drop'
        when s.status = 'parse_failure' and r.parse_status <> 'parse_failure' then 'drop'
        when s.status = 'error' and r.parse_status <> 'refused' then 'drop'
        when a.status <> 'ok' and s.judged_at > a.judged_at then 'failure asked again'
        when a.pairwise_run_id is not null then 'keep'
        else 'new'
    end as action
from staged_outcomes as s
left join llm_requests as r on r.request_id = s.request_id
left join pairwise_answers as a
    on a.pairwise_run_id = s.run_id and a.query_id = s.query_id and a.doc_1 = s.doc_1 and a.doc_2 = s.doc_2
   and a.personality = s.personality and a.prompt = s.prompt and a.position = s.position;

insert into pairwise_answer_history
select a.pairwise_run_id, a.query_id, a.doc_1, a.doc_2, a.relevance_1, a.relevance_2, a.personality, a.prompt,
       a.position, a.choice, a.confidence, a.status, a.reason, a.request_id, a.judged_at, $replaced_at, m.action
from pairwise_answers as a
inner join outcome_merge as m
    on m.run_id = a.pairwise_run_id and m.query_id = a.query_id and m.doc_1 = a.doc_1 and m.doc_2 = a.doc_2
   and m.personality = a.personality and m.prompt = a.prompt and m.position = a.position
where m.action = 'failure asked again';

delete from pairwise_answers as a
using outcome_merge as m
where m.action = 'failure asked again'
  and m.run_id = a.pairwise_run_id and m.query_id = a.query_id and m.doc_1 = a.doc_1 and m.doc_2 = a.doc_2
  and m.personality = a.personality and m.prompt = a.prompt and m.position = a.position;

insert into pairwise_answers (
    pairwise_run_id, query_id, doc_1, doc_2, relevance_1, relevance_2, personality, prompt, position, choice,
    confidence, status, reason, request_id, judged_at
)
select
    run_id, query_id, doc_1, doc_2, relevance_1, relevance_2, personality, prompt, position, choice, confidence,
    status, reason, request_id, judged_at
from outcome_merge
where action in ('new', 'failure asked again');

select count(*) from outcome_merge where action = 'drop'
