-- Stored answers for the request ids in wanted_requests: these are never sent again.
select r.request_id, r.raw_text
from llm_requests as r
inner join wanted_requests as w on w.request_id = r.request_id
where r.raw_text is not null
