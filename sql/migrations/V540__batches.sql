-- Issue 31 (batch mode): the requests a run asks through the OpenAI Batch API or vLLM's offline `run-batch` are
-- journaled here while they are out, so that a killed process, another machine or a week later resumes exactly and
-- nothing is submitted twice. A batch is live until its output and error files are collected into
-- llm_batch_lines; the engine then answers from those lines as it answers online (llm_requests, the journal, gates).
create table if not exists llm_batches (
    batch_id       varchar not null,   -- the provider's batch id, or file-<hex> for an exported file (vLLM run-batch)
    run_id         varchar not null,   -- the run that submitted it
    kind           varchar not null,   -- the run's stage
    model          varchar not null,
    base_url       varchar,            -- the Batch API's base URL without credentials; null for exported files
    round          integer not null,   -- 1 for a run's first submission, then 2, 3, ...
    status         varchar not null,   -- validating, in_progress, finalizing, cancelling, completed, failed, expired,
                                       -- cancelled; 'exported' for a file waiting for `peras batch import`
    input_file_id  varchar,            -- the provider's id of the uploaded input file (purpose batch)
    output_file_id varchar,            -- the provider's id of the output file, once the batch has one
    error_file_id  varchar,            -- the provider's id of the error file (per-line errors), once it has one
    n_requests     integer not null,
    submitted_at   timestamp not null, -- when the batch was created (or its file exported), UTC
    updated_at     timestamp not null, -- when its status was last read from the provider, UTC
    collected_at   timestamp           -- null while live: its requests are not submitted again
);

create table if not exists llm_batch_requests (
    batch_id   varchar not null,       -- the batch the line was submitted in (llm_batches.batch_id)
    custom_id  varchar not null,       -- the request id, with -r<k> for regeneration k
    request_id varchar not null,       -- the request it asks (llm_requests.request_id once answered)
    attempt    integer not null,       -- 0 the request as asked, k its regeneration k
    body       json                    -- the line's body, kept for exported files (written by `peras batch export`)
);

create table if not exists llm_batch_lines (
    batch_id      varchar not null,    -- the batch whose output or error file held the line
    custom_id     varchar not null,    -- the line's custom_id (the request id, -r<k> for regeneration k)
    request_id    varchar not null,    -- the request it answers
    attempt       integer not null,    -- 0 the request as asked, k its regeneration k
    status_code   integer,             -- the answer's HTTP status; null for a line the batch never ran
    body          json,                -- the chat completion (status 200)
    error_code    varchar,             -- batch_expired, batch_cancelled, the provider's code
    error_message varchar,             -- the provider's message for a failed line
    collected_at  timestamp not null   -- when the line was read into the warehouse, UTC
);
