-- Stored answers for the request ids in wanted_requests: what was said, whether it read, which run stored it.
-- Refused requests (HTTP 400/413/422) are stored with parse_status 'refused' and their reason.
select r.request_id, r.raw_text, r.logprobs, r.parse_status, r.parse_reason, r.run_id
from llm_requests as r
inner join wanted_requests as w on w.request_id = r.request_id
