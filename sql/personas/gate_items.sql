-- The answers this call planned (planned_items) with their stored outcomes, for the gate (tasks/engine/runs.py).
create or replace temp table gate_items as
select
    p.personality, p.item_id, p.sample_index, s.status,
    p.personality as failure_group,
    printf('%s item %d sample %d', p.personality, p.item_id, p.sample_index) as item_name
from planned_items as p
left join (select * from persona_answers where check_run_id = $run_id) as s
    using (personality, item_id, sample_index)
