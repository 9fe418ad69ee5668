-- Personality sets built with the study's two-step procedure (issue 18 part 1, `peras personas build`): per
-- condition, keywords are elicited (Step 1), then an instruction is generated from them (Step 2), asked through the
-- asking engine (requests in llm_requests, purposes 'persona_keywords' and 'persona_instruction'); each round's
-- candidates are checked with the BFI-2 (persona_check_runs), and a condition that fails is built again.

-- One row per build of a named set: each build of a name is a new version. Only published sets are judged with.
create table if not exists persona_sets (
    set_id              varchar primary key,
    set_name            varchar not null,
    version             integer not null,          -- 1, 2, ... per set_name
    model               varchar not null,          -- the model that wrote the keywords and instructions
    backend             varchar not null,
    params              json not null,             -- step sampling, seed, rounds, conditions, check settings, prompts
    status              varchar not null,          -- 'running', 'published', 'failed'
    status_reason       varchar,                   -- why, when the build failed
    created_at          timestamp not null,
    finished_at         timestamp,
    unique (set_name, version)
);

-- One row per condition x round built: both steps' raw answers, what was read from them, and the round's check.
create table if not exists persona_set_builds (
    set_id                  varchar not null,
    condition               varchar not null,      -- the study's code: HO, LO, HC, ... (its name is the {personality_type})
    round                   integer not null,      -- 1 ... max_rounds; round r samples with seed + r
    personality             varchar not null,      -- the code the set's persona carries: <set_name>-v<version>-<condition>
    keywords_raw            varchar,               -- the Step 1 answer as the model wrote it
    keywords                varchar,               -- the keywords read from it, comma-separated (Step 2's {personality_keywords})
    instruction_raw         varchar,               -- the Step 2 answer as the model wrote it
    instruction             varchar,               -- the instruction extracted from it (docs/personas.md, the rule)
    keywords_request_id     varchar,               -- the llm_requests row of Step 1
    instruction_request_id  varchar,               -- the llm_requests row of Step 2
    status                  varchar not null,      -- 'ok', 'parse_failure' (unreadable after regenerations), 'error'
    reason                  varchar,               -- why, when status != 'ok'
    built_at                timestamp not null,
    check_run_name          varchar,               -- the personas check run that judged this candidate
    is_faithful             boolean,               -- its fidelity comparison passed (persona_fidelity.is_pass)
    effect_size             double,                -- Cohen's d of that comparison (persona_fidelity)
    effect_ci_low           double,                -- lower end of its 95% interval (pass: >= 0.5)
    primary key (set_id, condition, round)
);
