-- Fusing judges (issue 20): the judge streams of a collection (the personalities of a judge run, or several runs)
-- fused per pair by the study's four voting baselines and, unless --baselines-only, by a fuser LLM that reads every
-- judge's label, confidence and explanation (prompt peras/prompts/fuser.toml; requests in llm_requests, purpose
-- 'fuse'). The comparison with the judges, the classifier and the default personality is a set of views
-- (sql/fuse/views/).

create table if not exists fuse_runs (
    fuse_run_id     varchar primary key,       -- a fuse run (fuse_runs)
    run_name        varchar not null unique,
    collection_id   varchar not null,
    feature_set_id  varchar not null,          -- the judge streams' id, as classify names the same streams
    model           varchar not null,          -- the fuser model; 'none' for a baselines-only run
    backend         varchar not null,          -- the fuser's backend; 'none' for a baselines-only run
    seed            bigint not null,           -- the judges' shuffle per pair depends on this and the pair alone
    params          json not null,             -- fuser request parameters, prompt fingerprint, anonymised: fixed
    scope           json not null,             -- the judge streams fused and the pairs asked of the latest call
    status          varchar not null,          -- 'running', 'published', 'failed_check', 'failed'
    status_reason   varchar,                   -- why, when the run failed
    created_at      timestamp not null,
    finished_at     timestamp
);

-- The judges a run fuses, in their canonical order (Judge k of a prompt is the judge at that pair's shuffled place).
create table if not exists fuse_judges (
    fuse_run_id         varchar not null,      -- the run (fuse_runs)
    judge               varchar not null,      -- its name in tables: the personality code, or the stream key
    judge_index         integer not null,      -- 1-based canonical position
    run_name            varchar not null,      -- the judge run (judge_runs)
    personality         varchar not null,
    cot                 boolean not null,
    confidence_method   varchar not null,
    primary key (fuse_run_id, judge)
);

-- Every pair a run fuses (all judges gave a usable label, and a confidence where their stream has one), with its
-- qrels grade and the baselines' votes: one row per pair and baseline.
create table if not exists fuse_votes (
    fuse_run_id     varchar not null,          -- the run (fuse_runs)
    query_id        varchar not null,
    doc_id          varchar not null,
    relevance       integer not null,          -- the qrels grade
    method          varchar not null,          -- 'vote_majority', 'vote_confidence', 'vote_sqrt_confidence', 'vote_entropy'
    label           integer not null check (label between 0 and 3),
    confidence      double check (confidence between 0 and 100),  -- the winner's share of the summed weight x 100
    primary key (fuse_run_id, query_id, doc_id, method)
);

-- One row per pair asked of the fuser.
create table if not exists fuse_answers (
    fuse_run_id     varchar not null,          -- the run (fuse_runs)
    query_id        varchar not null,
    doc_id          varchar not null,
    judge_order     varchar not null,          -- the judges as shown (Judge 1, 2, ...), comma-separated names
    label           integer check (label between 0 and 3),  -- the fuser's relevance; null unless status 'ok'
    confidence      double check (confidence between 0 and 100),  -- its confidence_score
    status          varchar not null,          -- 'ok', 'parse_failure', 'error'
    reason          varchar,                   -- why, when status != 'ok'
    request_id      varchar,                   -- the llm_requests row
    judged_at       timestamp not null,
    primary key (fuse_run_id, query_id, doc_id)
);

-- Failed fuser answers asked again (--retry-failed): the replaced row, as it was, with when and why.
create table if not exists fuse_answer_history (
    fuse_run_id     varchar not null,          -- the run (fuse_runs)
    query_id        varchar not null,
    doc_id          varchar not null,
    judge_order     varchar not null,          -- as in fuse_answers
    label           integer,                   -- null: the replaced answer was a failure
    confidence      double,                    -- as in fuse_answers; null for a failure
    status          varchar not null,          -- the replaced answer's status: 'parse_failure' or 'error'
    reason          varchar,
    request_id      varchar,                   -- the llm_requests row of the replaced answer
    judged_at       timestamp not null,
    replaced_at     timestamp not null,
    why             varchar not null           -- 'failure asked again'
);
