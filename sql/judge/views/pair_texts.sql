-- Every judged pair with its query and passage text, and text_sha: the first 16 hex digits of the sha256 of
-- query text, unit separator, passage text. A judgment stores the text_sha of the texts it was made on; when a
-- re-ingest changes either text, the judgment is stale: not scored (stg_judgment_facts), and asked again.
with final as (
    select
        q.collection_id,
        q.query_id,
        q.doc_id,
        qu.text as query_text,
        p.text as passage_text,
        left(sha256(qu.text || chr(31) || p.text), 16) as text_sha
    from qrels as q
    inner join queries as qu on qu.collection_id = q.collection_id and qu.query_id = q.query_id
    inner join passages as p on p.collection_id = q.collection_id and p.doc_id = q.doc_id
)

select * from final
