-- The pairs this call planned (planned_items) with their stored fuser answers, for the gate (tasks/engine/runs.py).
create or replace temp table gate_items as
select
    p.query_id, p.doc_id, s.label, s.confidence, s.status,
    'fuser' as failure_group,
    printf('topic %s passage %s', p.query_id, p.doc_id) as item_name
from planned_items as p
left join (select * from fuse_answers where fuse_run_id = $run_id) as s using (query_id, doc_id)
