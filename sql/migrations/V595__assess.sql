-- Human assessment (issue 51): `peras assess plan` picks the pairs of a judge run's pool to send to people, by a
-- strategy and a seed, and a plan grows by later budgets without re-picking; people label them on the assessor
-- page (`peras assess serve`), offline (`peras assess export --format html`) or in a file (`peras assess import`);
-- `peras export-qrels --hybrid PLAN` writes their labels where they exist and the LLM's elsewhere.

create table if not exists assess_plans (
    plan_id         varchar primary key,       -- a plan
    plan_name       varchar not null unique,   -- the plan's name, chosen with --name (default <run>-<strategy>)
    collection_id   varchar not null,          -- the collection whose pairs are assessed
    judge_run_id    varchar not null,          -- the judge run whose pool and labels the plan picks from (judge_runs)
    strategy        varchar not null,          -- how pairs are picked: 'random', 'low-confidence' or 'disagreement'
    seed            bigint not null,           -- seeds the order of pairs the strategy ranks equal
    n_pool          integer not null,          -- pairs the judge run labels: what the plan picks from
    created_at      timestamp not null
);

-- One row per pair a plan sends to people, in the order picked.
create table if not exists assess_pairs (
    plan_id         varchar not null,          -- the plan (assess_plans)
    query_id        varchar not null,
    doc_id          varchar not null,
    pick_order      integer not null,          -- 1 for the first pair picked; a later budget continues the count
    pick_score      double not null,           -- what the strategy ranked by: 1 - mean confidence/100, label entropy (bits), 0 for random
    llm_label       integer not null,          -- the judge run's majority label of the pair (its personalities' votes)
    added_at        timestamp not null,        -- when the budget that picked it was planned
    primary key (plan_id, query_id, doc_id)
);

-- One row per pair x assessor the assessor page handed out: a pair goes to one assessor unless --overlap.
create table if not exists assess_claims (
    plan_id         varchar not null,          -- the plan (assess_plans)
    query_id        varchar not null,
    doc_id          varchar not null,
    assessor        varchar not null,          -- the name the assessor typed
    is_skipped      boolean not null,          -- true: the assessor skipped it (it may go to another)
    claimed_at      timestamp not null,        -- when the page first showed the pair to the assessor
    primary key (plan_id, query_id, doc_id, assessor)
);

-- One row per pair x assessor: the human label, as given (the latest, when an assessor changed it).
create table if not exists assess_labels (
    plan_id         varchar not null,          -- the plan (assess_plans)
    query_id        varchar not null,
    doc_id          varchar not null,
    assessor        varchar not null,          -- who labelled it: the name typed on the page, or the import's
    relevance       integer not null check (relevance between 0 and 3), -- the human label, 0-3
    seconds         double,                    -- seconds the page was shown before the key was pressed; null from a file
    origin          varchar not null,          -- 'page' (assess serve) or 'import' (a file)
    labelled_at     timestamp not null,        -- when the label was given (or imported)
    primary key (plan_id, query_id, doc_id, assessor)
);
