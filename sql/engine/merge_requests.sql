-- Merge staged requests into llm_requests so that every stored request has exactly one current answer:
-- - new request ids are inserted;
-- - the same row loaded again (a shard left behind by a crash after its commit) changes nothing;
-- - a stored failure (parse failure or refusal) with a newer staged answer is replaced, the old one kept in
--   llm_request_history ('failure re-asked');
-- - otherwise the stored answer stays and the staged one goes to history ('duplicate answer'): a concurrent run
--   sent the same request. Outcomes built on it no longer match a stored answer and are asked again;
-- - an 'unanswered' line (sent, no answer) goes to llm_request_history only: it is no answer to reuse, but the
--   run's budget counts what it cost.
-- Loading a shard twice (a crash between commit and deletion) adds no history row twice.
create or replace temp table request_merge as
select
    s.request_id,
    case
        when r.request_id is null then 'new'
        when r.created_at = s.created_at and r.run_id is not distinct from s.run_id then 'same'
        when r.parse_status <> 'ok' and s.created_at > r.created_at then 'replace'
        else 'duplicate'
    end as action
from staged_requests as s
left join llm_requests as r on r.request_id = s.request_id
where s.parse_status <> 'unanswered';

-- the staged rows that go to history only: unanswered lines and duplicate answers (each once)
insert into llm_request_history (
    request_id, run_id, raw_text, attempt_texts, parsed_value, parse_status, parse_reason, http_requests, created_at,
    replaced_at, why, parsed_confidence, attempt_params
)
select s.request_id, s.run_id, s.raw_text, s.attempt_texts, s.parsed_value, s.parse_status, s.parse_reason,
       s.http_requests, s.created_at, $replaced_at,
       case
           when s.parse_status = 'unanswered' then 'no answer (the request failed)'
           else 'duplicate answer (the stored one is kept)'
       end,
       s.parsed_confidence, s.attempt_params
from staged_requests as s
where (
      s.parse_status = 'unanswered'
      or exists (select 1 from request_merge as m where m.request_id = s.request_id and m.action = 'duplicate')
  )
  and not exists (
      select 1 from llm_request_history as h
      where h.request_id = s.request_id and h.created_at = s.created_at and h.run_id is not distinct from s.run_id
  );

delete from staged_requests where parse_status = 'unanswered';

insert into llm_request_history (
    request_id, run_id, raw_text, attempt_texts, parsed_value, parse_status, parse_reason, http_requests, created_at,
    replaced_at, why, parsed_confidence, attempt_params
)
select r.request_id, r.run_id, r.raw_text, r.attempt_texts, r.parsed_value, r.parse_status, r.parse_reason,
       r.http_requests, r.created_at, $replaced_at, 'failure re-asked', r.parsed_confidence, r.attempt_params
from llm_requests as r
inner join request_merge as m on m.request_id = r.request_id and m.action = 'replace';

update llm_requests as r
set raw_text = s.raw_text, attempts = s.attempts, attempt_texts = s.attempt_texts, parsed_value = s.parsed_value,
    parse_status = s.parse_status, parse_reason = s.parse_reason, logprobs = s.logprobs,
    prompt_tokens = s.prompt_tokens, completion_tokens = s.completion_tokens, cached_tokens = s.cached_tokens,
    latency_ms = s.latency_ms, created_at = s.created_at, run_id = s.run_id, http_requests = s.http_requests,
    parsed_confidence = s.parsed_confidence, attempt_params = s.attempt_params
from staged_requests as s, request_merge as m
where s.request_id = r.request_id and m.request_id = s.request_id and m.action = 'replace';

insert into llm_requests (
    request_id, model, backend, prompt_hash, purpose, params, messages, raw_text, attempts, attempt_texts,
    parsed_value, parse_status, parse_reason, logprobs, prompt_tokens, completion_tokens, cached_tokens,
    latency_ms, created_at, run_id, http_requests, parsed_confidence, attempt_params
)
select
    s.request_id, s.model, s.backend, s.prompt_hash, s.purpose, s.params, s.messages, s.raw_text, s.attempts,
    s.attempt_texts, s.parsed_value, s.parse_status, s.parse_reason, s.logprobs, s.prompt_tokens,
    s.completion_tokens, s.cached_tokens, s.latency_ms, s.created_at, s.run_id, s.http_requests,
    s.parsed_confidence, s.attempt_params
from staged_requests as s
inner join request_merge as m on m.request_id = s.request_id and m.action = 'new'
