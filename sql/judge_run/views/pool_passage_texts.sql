-- The passage texts judge-run pools may use: the collection's passages, and for passages the collection does not
-- hold, the corpus file's (pool_passages).
with corpus_only as (
    select x.collection_id, x.doc_id, x.text
    from pool_passages as x
    anti join passages as p on p.collection_id = x.collection_id and p.doc_id = x.doc_id
),

final as (
    select collection_id, doc_id, text from passages
    union all
    select collection_id, doc_id, text from corpus_only
)

select * from final
