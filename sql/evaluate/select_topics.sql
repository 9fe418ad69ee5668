-- The judged topics of a collection with their texts: the queries a built run answers.
with judged as (
    select distinct query_id from qrels where collection_id = $collection_id
),

final as (
    select q.query_id, q.text
    from queries as q
    inner join judged using (query_id)
    where q.collection_id = $collection_id
)

select * from final order by query_id
