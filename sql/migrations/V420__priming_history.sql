-- Priming batches asked again (issue 14): a batch whose stored outcome failed (an unreadable answer, a refusal)
-- is asked again on `peras priming --retry-failed`; the new outcome replaces it in priming_batches and the failed
-- one is kept here, as it was, with when and why it was replaced (as judgment_history keeps judgments).

create table if not exists priming_batch_history (
    priming_run_id  varchar not null,
    query_id        varchar not null,
    trial           integer not null,
    n_prologue      integer not null,
    n_epilogue      integer not null,
    personality     varchar not null,
    condition       varchar not null,
    doc_ids         varchar[] not null,        -- prompt order, as in priming_batches
    scores          integer[],                 -- null: the replaced outcome was a failure
    status          varchar not null,          -- the replaced outcome's status: 'parse_failure' or 'error'
    reason          varchar,
    request_id      varchar,                   -- the llm_requests row of the replaced outcome
    judged_at       timestamp not null,        -- when the replaced outcome was made
    replaced_at     timestamp not null,
    why             varchar not null           -- 'failure asked again'
);
