-- Publish staged frames (registered as staged_queries, staged_passages, staged_qrels) for one collection.
insert into collections (collection_id, description, preset, fingerprint, ingested_at)
values ($collection_id, $description, $preset, $fingerprint, $ingested_at);

insert into queries (collection_id, query_id, text)
select $collection_id, query_id, text from staged_queries;

insert into passages (collection_id, doc_id, text)
select $collection_id, doc_id, text from staged_passages;

insert into qrels (collection_id, query_id, doc_id, relevance, qrels_set)
select $collection_id, query_id, doc_id, relevance, qrels_set from staged_qrels;
