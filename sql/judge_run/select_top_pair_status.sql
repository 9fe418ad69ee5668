-- For each top-K pair of the run files (registered as top_pairs: query_id, doc_id, system, file, line, row_nr):
-- whether a human judged it, whether the collection holds its query, and where its passage text is (the
-- collection's passages, or a corpus file read by an earlier judge-run).
with final as (
    select
        t.query_id,
        t.doc_id,
        t.system,
        t.file,
        t.line,
        t.row_nr,
        q.relevance is not null as is_labelled,
        qu.query_id is not null as has_query,
        p.doc_id is not null as in_passages,
        x.doc_id is not null as in_pool_passages
    from top_pairs as t
    left join qrels as q on q.collection_id = $collection_id and q.query_id = t.query_id and q.doc_id = t.doc_id
    left join queries as qu on qu.collection_id = $collection_id and qu.query_id = t.query_id
    left join passages as p on p.collection_id = $collection_id and p.doc_id = t.doc_id
    left join pool_passages as x on x.collection_id = $collection_id and x.doc_id = t.doc_id
)

select * from final order by row_nr
