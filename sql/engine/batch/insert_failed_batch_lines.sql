-- A batch that failed as a whole (no output or error file): one line per request it held, status null, error code
-- 'batch_failed' and the provider's reason, so that each failed batch counts against its requests' retries (and a
-- provider failing every batch stops the run instead of being sent the same round forever).
insert into llm_batch_lines (
    batch_id, custom_id, request_id, attempt, status_code, body, error_code, error_message, collected_at
)
select q.batch_id, q.custom_id, q.request_id, q.attempt, null, null, 'batch_failed', $error_message, $collected_at
from llm_batch_requests as q
where q.batch_id = $batch_id and not exists (
    select 1 from llm_batch_lines as l where l.batch_id = q.batch_id and l.custom_id = q.custom_id
)
