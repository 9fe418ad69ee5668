-- LLM requests and tokens per judgment of every group, counting each judgment's label request, confidence request
-- and sampling votes (see request_costs_from.sql).
select * from request_costs_from()
