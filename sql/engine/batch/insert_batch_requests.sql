-- The lines of a batch just submitted (registered as submitted_lines): which request and attempt each custom_id is.
insert into llm_batch_requests (batch_id, custom_id, request_id, attempt, body)
select batch_id, custom_id, request_id, attempt, body::json
from submitted_lines
