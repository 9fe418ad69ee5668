-- Judged passages (with text) of every topic at each relevance level: the topic rule and the draw limits.
with judged as (
    select q.query_id, q.relevance
    from qrels as q
    inner join passages as p on p.collection_id = q.collection_id and p.doc_id = q.doc_id
    where q.collection_id = $collection_id
),

final as (
    select
        query_id,
        count(*) filter (where relevance = 0) as n_level_0,
        count(*) filter (where relevance = 1) as n_level_1,
        count(*) filter (where relevance = 2) as n_level_2,
        count(*) filter (where relevance = 3) as n_level_3
    from judged
    group by query_id
)

select * from final order by query_id
