-- Staged outcomes (a stage's stage_outcomes.sql) with the parse status of the stored request each references (null:
-- no such request), for the stage's merge_outcomes.sql to decide with outcome_action.
create or replace temp table staged_checked as
select s.*, r.parse_status as request_parse_status
from staged_outcomes as s
left join llm_requests as r on r.request_id = s.request_id
