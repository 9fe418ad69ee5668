-- Staged outcomes (a stage's stage_outcomes.sql) with the parse status of the stored request each references (null:
-- no such request), for the stage's merge_outcomes.sql to decide with outcome_action.
create or replace temp table staged_checked as
select s.*, r.parse_status as request_parse_status
from staged_outcomes as s
left join (
    -- One row per request: on a DuckLake warehouse (no keys) a request two loaders stored at once has two copies
    -- until the dedupe (engine/dedupe_requests.sql) keeps the first stored; that copy decides here too.
    select request_id, arg_min(parse_status, created_at) as parse_status
    from llm_requests
    where request_id in (select request_id from staged_outcomes)
    group by request_id
) as r on r.request_id = s.request_id
