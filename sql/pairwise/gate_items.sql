-- The items this call planned (planned_items) with their stored answers, for the gate (tasks/engine/runs.py).
create or replace temp table gate_items as
select
    p.query_id, p.doc_1, p.doc_2, p.personality, p.prompt, p.position,
    p.relevance_1 as planned_relevance_1, p.relevance_2 as planned_relevance_2,
    s.relevance_1, s.relevance_2, s.choice, s.confidence, s.status,
    p.personality || ' ' || p.prompt as failure_group,
    printf('topic %s %s/%s %s %s %s', p.query_id, p.doc_1, p.doc_2, p.personality, p.prompt, p.position)
        as item_name
from planned_items as p
left join (select * from pairwise_answers where pairwise_run_id = $run_id) as s
    using (query_id, doc_1, doc_2, personality, prompt, position)
