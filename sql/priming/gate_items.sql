-- The batches this call planned (planned_items) with their stored outcomes, for the gate (tasks/engine/runs.py).
create or replace temp table gate_items as
select
    p.query_id, p.trial, p.n_prologue, p.n_epilogue, p.personality, p.condition,
    p.doc_ids as planned_doc_ids, s.doc_ids, s.scores, s.status,
    p.personality as failure_group,
    printf('topic %s trial %d PL=%d EL=%d %s %s', p.query_id, p.trial, p.n_prologue, p.n_epilogue,
           p.personality, p.condition) as item_name
from planned_items as p
left join (select * from priming_batches where priming_run_id = $run_id) as s
    using (query_id, trial, n_prologue, n_epilogue, personality, condition)
