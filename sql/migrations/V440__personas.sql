-- Persona fidelity (issue 18): the 60 BFI-2 items administered to every personality of a set, once at temperature
-- 0 and k times sampled, so that each domain score has a spread. The requests live in llm_requests (purpose
-- 'bfi2'); the scores, the 11 x 5 matrix and the per-trait fidelity are the views of sql/personas/views.

-- One row per `peras personas check` run: the set, model, sampling and status (only published runs reach the views).
create table if not exists persona_check_runs (
    check_run_id        varchar primary key,
    run_name            varchar not null unique,
    personality_set     varchar not null,          -- the set administered: 'builtin' (the eleven shipped conditions)
    model               varchar not null,
    backend             varchar not null,
    n_samples           integer not null,          -- k: sampled answers per item besides the greedy one
    sample_temperature  double not null,           -- the temperature of the k sampled answers
    seed                bigint not null,           -- sampled answer i is sent with seed + i
    params              json not null,             -- request parameters, prompt and items fingerprints: fixed
    scope               json not null,             -- the personalities of the latest call
    status              varchar not null,          -- 'running', 'published', 'failed_check', 'failed'
    status_reason       varchar,                   -- why, when the run failed
    created_at          timestamp not null,
    finished_at         timestamp
);

-- The BFI-2 items the checks were asked with (peras/data/bfi2/items.tsv; Soto & John, 2017).
create table if not exists bfi2_items (
    item_id         integer primary key,           -- 1-60, grouped by domain, facet, keying (not the questionnaire's order)
    domain_code     varchar not null,              -- O C E A N
    domain          varchar not null,              -- the Big-Five domain: Openness ... Neuroticism
    facet           varchar not null,              -- one of the 15 facets (3 per domain, 4 items each)
    keyed           varchar not null check (keyed in ('+', '-')),  -- '-': scored 6 - answer
    item            varchar not null               -- the statement, completing "I am someone who ..."
);

-- One row per personality x item x sample asked: the 1-5 answer, or the failure and why.
create table if not exists persona_answers (
    check_run_id    varchar not null,
    personality     varchar not null,
    item_id         integer not null,
    sample_index    integer not null,              -- 0: greedy (temperature 0); 1..k: sampled
    answer          integer check (answer between 1 and 5),  -- null unless status 'ok'
    status          varchar not null,              -- 'ok', 'parse_failure' (unreadable after regenerations), 'error'
    reason          varchar,                       -- why, when status != 'ok'
    request_id      varchar,                       -- the llm_requests row
    answered_at     timestamp not null,
    primary key (check_run_id, personality, item_id, sample_index)
);
