-- Move journaled LLM requests from shard files into the warehouse; requests already stored are kept as they are.
insert or ignore into llm_requests
select
    request_id, model, backend, prompt_hash, purpose, params, messages, raw_text, attempts, attempt_texts,
    parsed_value, parse_status, parse_reason, logprobs, prompt_tokens, completion_tokens, cached_tokens,
    latency_ms, created_at
from read_json($paths, format = 'newline_delimited', ignore_errors = true, columns = {
    request_id: 'varchar', model: 'varchar', backend: 'varchar', prompt_hash: 'varchar', purpose: 'varchar',
    params: 'json', messages: 'json', raw_text: 'varchar', attempts: 'integer', attempt_texts: 'json',
    parsed_value: 'double', parse_status: 'varchar', parse_reason: 'varchar', logprobs: 'json',
    prompt_tokens: 'integer', completion_tokens: 'integer', cached_tokens: 'integer', latency_ms: 'double',
    created_at: 'timestamp'
})
where request_id is not null and parse_status is not null
qualify row_number() over (partition by request_id order by created_at) = 1
