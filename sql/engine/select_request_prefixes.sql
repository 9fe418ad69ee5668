-- The first 64 bits of every stored request id of one model: the engine answers cache misses from these in memory.
select ('0x' || left(request_id, 16))::ubigint as prefix
from llm_requests
where model = $model
