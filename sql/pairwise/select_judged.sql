-- The judged passages of a collection (or one of its topic subsets) with their grades and texts: what pairs are
-- drawn from (tasks/pairwise/draws.py), in a stable order.
with subset_topics_wanted as (
    select query_id from subset_topics
    where collection_id = $collection_id and subset_name = $subset_name
),

final as (
    select t.query_id, t.doc_id, q.relevance, t.query_text, t.passage_text
    from pair_texts as t
    inner join qrels as q on q.collection_id = t.collection_id and q.query_id = t.query_id and q.doc_id = t.doc_id
    where t.collection_id = $collection_id
      and ($subset_name is null or t.query_id in (select query_id from subset_topics_wanted))
)

select * from final order by query_id, doc_id
