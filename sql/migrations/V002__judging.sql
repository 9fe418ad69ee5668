-- Judging: runs, the analyst-facing judgments, and every LLM request/response behind them.
-- task_type leaves room for pairwise preference judging: doc_id then holds 'docA|docB'.

create table if not exists judge_runs (
    run_id          varchar primary key,
    run_name        varchar not null unique,
    source          varchar not null,          -- 'llm' (judged here) or 'import' (judged elsewhere)
    task_type       varchar not null,          -- 'pointwise' (one passage); 'pairwise' reserved
    collection_id   varchar not null,
    subset_name     varchar,                   -- null: the whole collection
    model           varchar not null,
    backend         varchar not null,          -- 'llama.cpp', 'vllm', 'openai-compatible', 'import'
    params          json not null,             -- sampling and run settings; never credentials
    created_at      timestamp not null
);

-- One row per (run, pair, personality, CoT setting, confidence method).
create table if not exists judgments (
    run_id                  varchar not null,
    query_id                varchar not null,
    doc_id                  varchar not null,
    personality             varchar not null,  -- 'default', 'HA', 'LA', ... or a user-defined code
    cot                     boolean not null,
    confidence_method       varchar not null,  -- 'verbalized', 'logprob', 'sampling', 'given', 'none'
    label                   integer check (label between 0 and 3),
    confidence              double check (confidence between 0 and 100),
    expected_score          double,            -- logprob: sum_k k * p(k); sampling: mean vote
    status                  varchar not null,  -- 'ok', 'label_parse_failure', 'confidence_parse_failure', 'error'
    reason                  varchar,           -- why, when status != 'ok'
    label_request_id        varchar,
    confidence_request_id   varchar,
    judged_at               timestamp not null,
    primary key (run_id, query_id, doc_id, personality, cot, confidence_method)
);

-- Every request sent to an LLM, keyed by what was asked: the same request is never sent twice.
create table if not exists llm_requests (
    request_id          varchar primary key,   -- sha256 of (model, messages, sampling params, sample index)
    model               varchar not null,
    backend             varchar not null,
    prompt_hash         varchar not null,      -- sha256 of the messages alone
    purpose             varchar not null,      -- 'label', 'confidence', 'batch'
    params              json not null,
    messages            json not null,
    raw_text            varchar,               -- the answer that was parsed (last attempt)
    attempts            integer not null,      -- 1 + regenerations
    attempt_texts       json not null,         -- every attempt's raw text, in order
    parsed_value        double,
    parse_status        varchar not null,      -- 'ok', 'parse_failure', 'error'
    parse_reason        varchar,
    logprobs            json,                  -- top log-probabilities at the answer token, when asked
    prompt_tokens       integer,
    completion_tokens   integer,
    cached_tokens       integer,
    latency_ms          double,
    created_at          timestamp not null
);
