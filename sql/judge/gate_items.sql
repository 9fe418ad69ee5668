-- The judge's gate_items (replaces the engine's template; tasks/engine/runs.py runs it first in every gate): the
-- run's judgments, every call's (run_judgments), and those this call planned with what the plan fixes (gate_items).
-- The planned items are the registered tables planned_pairs (query_id, doc_id, text_sha) x planned_settings
-- (personality, cot, confidence_method, label_params), joined to the judgments one side at a time so the gate never
-- holds their product: a judge run is millions of judgments.
create or replace temp table run_judgments as
select * from judgments where run_id = $run_id;

create or replace temp table gate_items as
select j.*, s.label_params, p.text_sha as current_sha, true as is_planned
from run_judgments as j
inner join planned_pairs as p using (query_id, doc_id)
inner join planned_settings as s using (personality, cot, confidence_method)
