-- Pairwise judging (issue 19): which of two judged passages of a topic is more relevant, asked of an LLM in both
-- orders under a personality and one of three prompts. The LLM requests behind the answers live in llm_requests
-- (purpose 'pairwise'); the measures are views over pairwise_answers (sql/pairwise/views/).

create table if not exists pairwise_runs (
    pairwise_run_id varchar primary key,       -- a pairwise run (pairwise_runs)
    run_name        varchar not null unique,
    collection_id   varchar not null,
    subset_name     varchar,                   -- null: the whole collection
    model           varchar not null,
    backend         varchar not null,
    seed            bigint not null,           -- the pair draws depend on this and the qrels alone
    params          json not null,             -- request parameters per prompt and prompt fingerprints: fixed
    scope           json not null,             -- pairs per topic, prompts, personalities of the latest call
    status          varchar not null,          -- 'running', 'published', 'failed_check', 'failed'
    status_reason   varchar,                   -- why, when the run failed
    created_at      timestamp not null,
    finished_at     timestamp
);

-- One row per request: a drawn pair (doc_1, doc_2) shown in one order under one personality and prompt.
create table if not exists pairwise_answers (
    pairwise_run_id varchar not null,          -- the run (pairwise_runs)
    query_id        varchar not null,
    doc_1           varchar not null,          -- passage A in the 'AB' order, B in 'BA'
    doc_2           varchar not null,          -- passage B in the 'AB' order, A in 'BA'
    relevance_1     integer not null,          -- qrels grade of doc_1 when drawn
    relevance_2     integer not null,          -- qrels grade of doc_2 when drawn
    personality     varchar not null,
    prompt          varchar not null check (prompt in ('certainty', 'tie', 'self')),  -- peras/prompts/pairwise_*, self_pairwise
    position        varchar not null check (position in ('AB', 'BA')),  -- 'AB': doc_1 shown as A; 'BA': doc_2
    choice          varchar check (choice in ('A', 'B', 'C')),  -- the position chosen; null unless status 'ok'
    confidence      double,                    -- certainty 1-100 ('certainty') or confidence_score 0-100 ('self')
    status          varchar not null,          -- 'ok', 'parse_failure', 'error'
    reason          varchar,                   -- why, when status != 'ok'
    request_id      varchar,                   -- the llm_requests row
    judged_at       timestamp not null,
    primary key (pairwise_run_id, query_id, doc_1, doc_2, personality, prompt, position)
);

-- Failed answers asked again (--retry-failed): the replaced row, as it was, with when and why.
create table if not exists pairwise_answer_history (
    pairwise_run_id varchar not null,          -- the run (pairwise_runs)
    query_id        varchar not null,
    doc_1           varchar not null,          -- as in pairwise_answers
    doc_2           varchar not null,          -- as in pairwise_answers
    relevance_1     integer not null,          -- as in pairwise_answers
    relevance_2     integer not null,          -- as in pairwise_answers
    personality     varchar not null,
    prompt          varchar not null,          -- 'certainty', 'tie', 'self'
    position        varchar not null,          -- 'AB': doc_1 shown as passage A; 'BA': doc_2 shown as A
    choice          varchar,                   -- null: the replaced answer was a failure
    confidence      double,                    -- as in pairwise_answers; null for a failure
    status          varchar not null,          -- the replaced answer's status: 'parse_failure' or 'error'
    reason          varchar,
    request_id      varchar,                   -- the llm_requests row of the replaced answer
    judged_at       timestamp not null,
    replaced_at     timestamp not null,
    why             varchar not null           -- 'failure asked again'
);
