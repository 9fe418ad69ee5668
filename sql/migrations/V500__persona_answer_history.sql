-- BFI-2 answers that a check run asked again (--retry-failed) keep the replaced failure, as every other LLM stage
-- does (priming_batch_history, pairwise_answer_history): nothing the warehouse once stored is destroyed.
create table if not exists persona_answer_history (
    check_run_id    varchar not null,              -- the check run (persona_check_runs)
    personality     varchar not null,
    item_id         integer not null,              -- the BFI-2 item (bfi2_items)
    sample_index    integer not null,              -- as in persona_answers: 0 greedy, 1..k sampled
    answer          integer,                       -- null: the replaced answer was a failure
    status          varchar not null,              -- the replaced answer's status: 'parse_failure' or 'error'
    reason          varchar,
    request_id      varchar,                       -- the llm_requests row of the replaced answer
    answered_at     timestamp not null,
    replaced_at     timestamp not null,
    why             varchar not null               -- 'failure asked again'
);
