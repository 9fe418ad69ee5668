-- Per topic of a collection (optionally one qrels set): judged pairs and pairs at each level.
select
    query_id,
    count(*) as n_pairs,
    count(*) filter (where relevance = 0) as n_rel0,
    count(*) filter (where relevance = 1) as n_rel1,
    count(*) filter (where relevance = 2) as n_rel2,
    count(*) filter (where relevance = 3) as n_rel3
from qrels
where collection_id = $collection_id and ($qrels_set is null or qrels_set = $qrels_set)
group by query_id
order by query_id
