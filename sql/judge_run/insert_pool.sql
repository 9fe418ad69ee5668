-- Publish a pool: the corpus texts it needs (registered as corpus_texts: doc_id, text), replacing an earlier
-- corpus file's text of the same passage, and its pairs (registered as pool_rows), kept if already there.
insert into pool_passages (collection_id, doc_id, text, source_path, added_at)
select $collection_id, doc_id, text, $source_path, $created_at from corpus_texts
on conflict (collection_id, doc_id) do update set
    text = excluded.text, source_path = excluded.source_path, added_at = excluded.added_at;

insert into pool_pairs (pool_id, collection_id, query_id, doc_id, system, run_file, run_line, created_at)
select $pool_id, $collection_id, query_id, doc_id, system, file, line, $created_at from pool_rows
on conflict (pool_id, query_id, doc_id) do nothing
