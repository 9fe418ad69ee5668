-- Probe sets (`peras probes build`): perturbed copies of a collection's judged pairs, ingested as a collection of
-- their own ('<collection>-probes'); these tables keep what each copy is. docs/probes.md.

-- One row per probe collection: where its pairs came from and how they were drawn.
create table if not exists probe_sets (
    collection_id           varchar primary key,  -- the probe collection, judged like any other
    source_collection_id    varchar not null,     -- the collection its pairs were drawn from
    subset_name             varchar,              -- the topic subset they were drawn from; null: the whole collection
    n_pairs                 integer not null,     -- pairs drawn (each with a clean copy)
    seed                    bigint not null,      -- the draw's seed (pairs and other topics' passages)
    kinds                   json not null,        -- the kinds built, by name
    n_copies                integer not null,     -- passages in the probe collection, clean copies included
    built_at                timestamp not null
);

-- One row per passage of a probe collection: the original pair it was made from, its kind and its clean copy.
create table if not exists probe_docs (
    collection_id           varchar not null,     -- the probe collection
    query_id                varchar not null,
    doc_id                  varchar not null,     -- '<source_doc_id>#<kind>-<variant>', the clean copy '<source_doc_id>#clean'
    source_doc_id           varchar not null,     -- the original pair's doc_id, in the source collection
    text_doc_id             varchar not null,     -- whose passage the copy's text is made from (another topic's for other-topic kinds)
    kind                    varchar not null,     -- 'clean' or a probe kind: 'query-stuffing', 'paraphrase', ...
    variant                 varchar not null,     -- the kind's variant: 'start', 'perfect-end', ...; a clean copy's 'own' or 'other-topic'
    role                    varchar not null,     -- 'clean', 'attack' (must not raise the label) or 'control' (must not change it)
    baseline_doc_id         varchar not null,     -- the clean copy this copy is compared with (a clean copy: itself)
    relevance               integer not null,     -- the human label the copy keeps: the original pair's; 0 for another topic's passage
    primary key (collection_id, query_id, doc_id)
);
