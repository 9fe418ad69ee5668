-- Experiment 2: the multi-judge relevance classifier, evaluated over repeated stratified splits.
-- A classify run is one call of `peras classify`; its trials hold one row per trial x learner.

create table if not exists clf_runs (
    classify_run_id     varchar primary key,
    collection_id       varchar not null,
    feature_set_id      varchar not null,      -- sha256 of the feature sources (first 16 hex digits)
    feature_mode        varchar not null,      -- 'personalities' (one run/cot/method) or 'runs' (a list of runs)
    feature_sources     json not null,         -- [{run_name, personality, cot, confidence_method, column}, ...]
    feature_columns     json not null,         -- the matrix columns, in order
    n_pairs             integer not null,      -- pairs used (complete in every feature)
    n_excluded          integer not null,      -- pairs left out for a parse failure in some source
    n_trials            integer not null,
    base_seed           bigint not null,
    train_fraction      double not null,
    learners            json not null,
    versions            json not null,         -- library versions that produced the numbers
    started_at          timestamp not null,
    finished_at         timestamp not null
);

create table if not exists clf_trials (
    classify_run_id     varchar not null,
    trial               integer not null,      -- 1..n_trials
    seed                bigint not null,       -- drives the split and the learner
    learner             varchar not null,      -- 'rf', 'xgboost', ..., 'vote_majority', 'single:HA'
    learner_kind        varchar not null,      -- 'supervised', 'vote' (unsupervised), 'single' (one source as is)
    kappa               double not null,       -- Cohen's kappa on the test part
    qwk                 double not null,       -- quadratic-weighted kappa
    f1                  double not null,       -- macro-F1 over the four levels
    n_train             integer not null,
    n_test              integer not null,
    feature_set_id      varchar not null,
    created_at          timestamp not null,    -- the classify run's timestamp
    primary key (classify_run_id, trial, learner)
);
