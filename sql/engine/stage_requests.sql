-- Journaled requests of shard files, one row per request id (the first journaled answer), ready to merge; and
-- every 'unanswered' line (a request sent that got no answer: it goes to llm_request_history only, so that the
-- run-wide budget counts it).
create or replace temp table staged_requests as
select
    warehouse_id, run_id, request_id, model, backend, prompt_hash, purpose, params, messages, raw_text, attempts,
    attempt_texts, parsed_value, parse_status, parse_reason, logprobs, prompt_tokens, completion_tokens,
    cached_tokens, latency_ms, created_at, http_requests, parsed_confidence, attempt_params
from read_json($paths, format = 'newline_delimited', ignore_errors = true, columns = {
    warehouse_id: 'varchar', run_id: 'varchar',
    request_id: 'varchar', model: 'varchar', backend: 'varchar', prompt_hash: 'varchar', purpose: 'varchar',
    params: 'json', messages: 'json', raw_text: 'varchar', attempts: 'integer', attempt_texts: 'json',
    parsed_value: 'double', parse_status: 'varchar', parse_reason: 'varchar', logprobs: 'json',
    prompt_tokens: 'integer', completion_tokens: 'integer', cached_tokens: 'integer', latency_ms: 'double',
    created_at: 'timestamp', http_requests: 'integer', parsed_confidence: 'double', attempt_params: 'json'
})
where request_id is not null and parse_status is not null and created_at is not null
qualify parse_status = 'unanswered'
     or row_number() over (partition by request_id, parse_status = 'unanswered' order by created_at) = 1
