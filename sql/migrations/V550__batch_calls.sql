-- Issue 31 (batch mode): how each batch-mode run was last called (its Prefect flow and parameters), so that the
-- batch-poll deployment (flows/batch_poll.py) can call it again once batches of its model end: it collects them,
-- submits the next round or gates and publishes the run, unattended. Settings are not kept: they come from the
-- poller's environment, with the Batch API and the model recorded here.
create table if not exists llm_batch_calls (
    run_id      varchar not null,  -- the run (llm_batches.run_id); one row per run, replaced by each call
    kind        varchar not null,  -- the run's stage
    flow_name   varchar not null,  -- the Prefect flow whose call asked it in batch mode (judge, pairwise, ...)
    parameters  json not null,     -- that call's parameters, settings left out
    base_url    varchar not null,  -- the Batch API it asks, without credentials
    model       varchar not null,  -- the model it asks
    recorded_at timestamp not null, -- when the call was recorded, UTC
    finished_at timestamp          -- when a call found nothing waiting (the run gated); null while it waits
);
