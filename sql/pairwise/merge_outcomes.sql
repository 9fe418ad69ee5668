-- Merge staged pairwise answers (requests are merged first), each as outcome_action says (sql/engine/views):
-- dropped if it contradicts its stored request, kept if stored, replaced if a stored failure was asked again (the old
-- one kept in pairwise_answer_history), else new. Returns the number left out.
create or replace temp table outcome_merge as
select
    s.*,
    outcome_action(
        s.request_parse_status, s.status, s.judged_at, a.pairwise_run_id is not null, a.status, a.judged_at
    ) as action
from staged_checked as s
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
