-- Every pooled pair (pool_pairs) with its query and passage text and text_sha, made as pair_texts is
-- (pair_texts_of), the passage text from pool_passage_texts (the collection's, else the corpus file's). A pair
-- without both texts is not here: judge-run reports it and never judges it.
with final as (
    select pool_id, collection_id, query_id, doc_id, query_text, passage_text, text_sha
    from pair_texts_of('pool_pairs', 'pool_passage_texts')
)

select * from final
