-- Every judged pair with its query and passage text, and text_sha: the first 16 hex digits of the sha256 of
-- query text, unit separator, passage text (pair_texts_of). A judgment stores the text_sha of the texts it was
-- made on; when a re-ingest changes either text, the judgment is stale: not scored (stg_judgment_facts), and asked
-- again.
with final as (
    select collection_id, query_id, doc_id, query_text, passage_text, text_sha
    from pair_texts_of('qrels', 'passages')
)

select * from final
