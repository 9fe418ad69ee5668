-- Of the imported lines (registered as imported_lines: custom_id, request_id), those whose request already has a
-- readable answer stored (by this run or any other): an import never replaces an answer.
select i.custom_id
from imported_lines as i
where exists (select 1 from llm_requests as r where r.request_id = i.request_id and r.parse_status = 'ok')
