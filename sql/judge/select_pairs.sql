-- The judged pairs of a collection (or one of its topic subsets) with their texts, in a stable order.
-- text_sha ties a judgment to the texts it was made on (sql/judge/views/pair_texts.sql computes it the same way).
with subset_topics_wanted as (
    select query_id from subset_topics
    where collection_id = $collection_id and subset_name = $subset_name
),

final as (
    select t.query_id, t.doc_id, t.query_text, t.passage_text, t.text_sha
    from pair_texts as t
    where t.collection_id = $collection_id
      and ($subset_name is null or t.query_id in (select query_id from subset_topics_wanted))
)

select * from final order by query_id, doc_id
