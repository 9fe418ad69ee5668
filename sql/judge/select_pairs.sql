-- The judged pairs of a collection (or one of its topic subsets) with their texts, in a stable order.
with subset_topics_wanted as (
    select query_id from subset_topics
    where collection_id = $collection_id and subset_name = $subset_name
),

final as (
    select q.query_id, q.doc_id, qu.text as query_text, p.text as passage_text
    from qrels as q
    inner join queries as qu on qu.collection_id = q.collection_id and qu.query_id = q.query_id
    inner join passages as p on p.collection_id = q.collection_id and p.doc_id = q.doc_id
    where q.collection_id = $collection_id
      and ($subset_name is null or q.query_id in (select query_id from subset_topics_wanted))
)

select * from final order by query_id, doc_id
