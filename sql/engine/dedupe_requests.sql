-- On a DuckLake warehouse (no keys) two loaders committing the same request at once (two runs asking the same
-- prompt of the same model) both store it. After each load, every request stored more than once is brought back to
-- one -- not only those this load stored: a loader killed between its commit and this step leaves copies that the
-- next load anywhere mends. The first stored copy stays, the others go to llm_request_history as 'duplicate answer',
-- exactly as merge_requests treats a request that arrives second. The request ids brought back to one are left in
-- deduped_request_ids: a stage whose answers are re-derived from their requests (judge) then moves what was built on
-- a copy that went and no longer reads so (its drop_on_replaced_copies.sql) and asks it again.
-- One transaction; retried on conflict.
create or replace temp table request_copies as
select r.*, row_number() over (partition by r.request_id order by r.created_at, r.run_id, r.raw_text) as copy_no
from llm_requests as r
where r.request_id in (
    select request_id from llm_requests
    group by request_id
    having count(*) > 1
);

insert into llm_request_history (
    request_id, run_id, raw_text, attempt_texts, parsed_value, parse_status, parse_reason, http_requests, created_at,
    replaced_at, why, parsed_confidence, attempt_params
)
select request_id, run_id, raw_text, attempt_texts, parsed_value, parse_status, parse_reason, http_requests,
       created_at, $replaced_at, 'duplicate answer', parsed_confidence, attempt_params
from request_copies
where copy_no > 1;

create or replace temp table deduped_request_ids as
select distinct request_id from request_copies;

delete from llm_requests where request_id in (select request_id from request_copies);

insert into llm_requests select * exclude (copy_no) from request_copies where copy_no = 1
