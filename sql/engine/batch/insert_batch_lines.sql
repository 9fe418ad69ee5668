-- Collected output and error lines of one batch (registered as collected_lines: custom_id, status_code, body,
-- error_code, error_message), matched to the requests it was submitted with; a line collected before is not added
-- again (a collection or an import repeated changes nothing).
insert into llm_batch_lines (
    batch_id, custom_id, request_id, attempt, status_code, body, error_code, error_message, collected_at
)
select q.batch_id, q.custom_id, q.request_id, q.attempt, c.status_code, c.body::json, c.error_code, c.error_message,
       $collected_at
from collected_lines as c
inner join llm_batch_requests as q on q.batch_id = $batch_id and q.custom_id = c.custom_id
where not exists (
    select 1 from llm_batch_lines as l where l.batch_id = q.batch_id and l.custom_id = q.custom_id
)
