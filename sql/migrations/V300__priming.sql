-- Threshold priming in batch judging: does a batch that opens with highly relevant passages (HT) make the
-- model score the same closing passages lower than a batch that opens with irrelevant ones (LT)?
-- The LLM requests behind the batches live in llm_requests (purpose 'batch'); per-passage scores are the
-- view priming_scores, unnested from priming_batches.

create table if not exists priming_runs (
    priming_run_id  varchar primary key,
    run_name        varchar not null unique,
    collection_id   varchar not null,
    model           varchar not null,
    backend         varchar not null,
    seed            bigint not null,           -- the trial draws depend on this alone
    params          json not null,             -- request parameters and prompt fingerprint: fixed for a run
    scope           json not null,             -- topics, trials, settings, personalities of the latest call
    status          varchar not null,          -- 'running', 'published', 'failed_check'
    created_at      timestamp not null,
    finished_at     timestamp
);

-- One row per batch asked: (topic, trial, setting) fixes the draw; HT and LT share the epilogue.
create table if not exists priming_batches (
    priming_run_id  varchar not null,
    query_id        varchar not null,
    trial           integer not null,          -- 1..trials
    n_prologue      integer not null,          -- PL: passages before the epilogue
    n_epilogue      integer not null,          -- EL: the qrel-2 passages scored under both conditions
    personality     varchar not null,
    condition       varchar not null check (condition in ('HT', 'LT')),
    doc_ids         varchar[] not null,        -- prompt order: the PL prologue passages, then the EL epilogue
    scores          integer[],                 -- the model's scores in the same order; null unless status 'ok'
    status          varchar not null,          -- 'ok', 'parse_failure', 'error'
    reason          varchar,                   -- why, when status != 'ok'
    request_id      varchar,                   -- the llm_requests row
    judged_at       timestamp not null,
    primary key (priming_run_id, query_id, trial, n_prologue, n_epilogue, personality, condition)
);

-- Paired t-tests (scipy.stats.ttest_rel(LT, HT)) over epilogue passages scored in both conditions.
-- query_id '*' pools the topics of the run. The *_vs_default columns test this personality's per-passage
-- gap against the default personality's on the same passages (null for the default itself).
create table if not exists priming_tests (
    priming_run_id  varchar not null,
    query_id        varchar not null,
    n_prologue      integer not null,
    n_epilogue      integer not null,
    personality     varchar not null,
    n_pairs         integer not null,
    mean_ht         double not null,
    mean_lt         double not null,
    t_stat          double,                    -- null when undefined (fewer than 2 pairs, no variance)
    p_value         double,
    n_pairs_vs_default  integer,
    gap_vs_default  double,                    -- mean (LT - HT) here minus mean (LT - HT) under default
    t_vs_default    double,
    p_vs_default    double,
    primary key (priming_run_id, query_id, n_prologue, n_epilogue, personality)
);

-- The priming index: mean over trials (topic x trial x setting) of mean LT - mean HT epilogue score.
create table if not exists priming_indexes (
    priming_run_id  varchar not null,
    personality     varchar not null,
    n_trials        integer not null,          -- trials whose HT and LT batches both parsed
    priming_index   double not null,
    sd              double,                    -- of the per-trial differences (ddof 1)
    ci_low          double,                    -- 95% t interval; null for fewer than 2 trials
    ci_high         double,
    primary key (priming_run_id, personality)
);
