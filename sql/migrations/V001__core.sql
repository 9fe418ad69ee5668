-- Core collection tables: what a TREC-style test collection is once ingested.
-- IR records keep the ir_datasets names: query_id, doc_id, relevance, text.

create table if not exists collections (
    collection_id   varchar primary key,
    description     varchar not null,
    preset          varchar,              -- named preset it came from ('dl19', 'sample', ...) or null for custom files
    fingerprint     varchar not null,     -- sha256 over the source files' sha256s: re-ingesting the same files is a no-op
    ingested_at     timestamp not null
);

create table if not exists queries (
    collection_id   varchar not null,
    query_id        varchar not null,
    text            varchar not null,
    primary key (collection_id, query_id)
);

create table if not exists passages (
    collection_id   varchar not null,
    doc_id          varchar not null,
    text            varchar not null,
    primary key (collection_id, doc_id)
);

create table if not exists qrels (
    collection_id   varchar not null,
    query_id        varchar not null,
    doc_id          varchar not null,
    relevance       integer not null check (relevance between 0 and 3),
    qrels_set       varchar not null,     -- which qrels file: 'test', 'dev' (LLMJudge keeps both, apart)
    primary key (collection_id, query_id, doc_id)
);

-- Named topic subsets (the study's balanced selection, the LLMJudge splits, user lists).
create table if not exists subsets (
    collection_id   varchar not null,
    subset_name     varchar not null,
    rule            varchar not null,     -- how it was chosen, in words
    params          json not null,
    n_topics        integer not null,
    n_pairs         integer not null,
    created_at      timestamp not null,
    primary key (collection_id, subset_name)
);

create table if not exists subset_topics (
    collection_id   varchar not null,
    subset_name     varchar not null,
    query_id        varchar not null,
    rank            integer not null,     -- order of selection (1 = most balanced)
    balance_score   double,
    primary key (collection_id, subset_name, query_id)
);

-- Every ingest that published something, with its source files.
create table if not exists ingest_runs (
    ingest_run_id   varchar primary key,
    collection_id   varchar not null,
    fingerprint     varchar not null,
    started_at      timestamp not null,
    finished_at     timestamp not null,
    n_queries       integer not null,
    n_passages      integer not null,
    n_qrels         integer not null
);

create table if not exists ingest_files (
    ingest_run_id   varchar not null,
    role            varchar not null,     -- 'qrels:test', 'qrels:dev', 'queries', 'passages'
    path            varchar not null,
    sha256          varchar not null,
    n_bytes         bigint not null,
    n_records       bigint not null,      -- records read from the file (lines for qrels/TSV, objects for JSONL)
    primary key (ingest_run_id, role, path)
);
