-- Every ingested collection (or one) with its topic subsets: topics, judged pairs and pairs at each level.
-- A collection without subsets has one row with subset_name null, so "no subsets" and "no such collection"
-- differ. Pairs are the qrels of the subset's topics, every qrels set, as `peras judge --subset` judges them.
with wanted_collections as (
    select collection_id
    from collections
    where $collection_id is null or collection_id = $collection_id
),

subset_pairs as (
    select t.collection_id, t.subset_name, q.relevance
    from subset_topics as t
    join qrels as q on q.collection_id = t.collection_id and q.query_id = t.query_id
),

level_counts as (
    select
        collection_id,
        subset_name,
        count(*) as n_pairs,
        count(*) filter (where relevance = 0) as n_rel0,
        count(*) filter (where relevance = 1) as n_rel1,
        count(*) filter (where relevance = 2) as n_rel2,
        count(*) filter (where relevance = 3) as n_rel3
    from subset_pairs
    group by collection_id, subset_name
),

final as (
    select
        c.collection_id,
        s.subset_name,
        s.n_topics,
        coalesce(l.n_pairs, 0) as n_pairs,
        coalesce(l.n_rel0, 0) as n_rel0,
        coalesce(l.n_rel1, 0) as n_rel1,
        coalesce(l.n_rel2, 0) as n_rel2,
        coalesce(l.n_rel3, 0) as n_rel3,
        s.rule
    from wanted_collections as c
    left join subsets as s on s.collection_id = c.collection_id
    left join level_counts as l on l.collection_id = s.collection_id and l.subset_name = s.subset_name
)

select * from final order by collection_id, subset_name
