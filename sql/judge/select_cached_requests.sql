-- Stored answers for the request ids in wanted_requests: these are never sent again.
select r.request_id, r.parsed_value, r.parse_status = 'ok' as is_ok, r.parse_reason, r.logprobs
from llm_requests as r
inner join wanted_requests as w on w.request_id = r.request_id
