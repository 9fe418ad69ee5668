-- Judging what the qrels are missing (issue 21, `peras judge-run`): the top-K passages of TREC run files that no
-- human judged, pooled to be judged by the normal judge flow. Their human relevance is unknown: no qrels row, so
-- every metric (stg_judgment_facts joins the qrels) leaves their judgments out.

create table if not exists pool_pairs (
    pool_id         varchar not null,          -- the pool: a digest of its collection and pairs (same pairs, same id)
    collection_id   varchar not null,
    query_id        varchar not null,
    doc_id          varchar not null,
    system          varchar not null,          -- the first system (in file order) whose top K holds the pair
    run_file        varchar not null,          -- the run file of that system's line
    run_line        integer not null,          -- its line number there
    created_at      timestamp not null,
    primary key (pool_id, query_id, doc_id)
);

-- Texts of pooled passages the collection does not hold, read from a corpus file (--corpus); a passage the
-- collection holds keeps the collection's text.
create table if not exists pool_passages (
    collection_id   varchar not null,
    doc_id          varchar not null,
    text            varchar not null,
    source_path     varchar not null,          -- the corpus file it was read from
    added_at        timestamp not null,        -- when judge-run stored it (a later corpus file's text replaces it)
    primary key (collection_id, doc_id)
);
