-- Publish a pool: the corpus texts it needs (registered as corpus_texts: doc_id, text), replacing an earlier
-- corpus file's text of the same passage, and its pairs (registered as pool_rows), kept if already there.
-- Written without ON CONFLICT (a DuckLake warehouse has no keys): replace, then add what is missing.
delete from pool_passages as p
where p.collection_id = $collection_id and exists (select 1 from corpus_texts as c where c.doc_id = p.doc_id);

insert into pool_passages (collection_id, doc_id, text, source_path, added_at)
select $collection_id, doc_id, text, $source_path, $created_at from corpus_texts;

insert into pool_pairs (pool_id, collection_id, query_id, doc_id, system, run_file, run_line, created_at)
select $pool_id, $collection_id, r.query_id, r.doc_id, r.system, r.file, r.line, $created_at
from pool_rows as r
where not exists (
    select 1 from pool_pairs as p where p.pool_id = $pool_id and p.query_id = r.query_id and p.doc_id = r.doc_id
)
