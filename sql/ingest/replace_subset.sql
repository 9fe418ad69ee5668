-- Store (or replace) one named topic subset from staged_subset_topics.
delete from subset_topics where collection_id = $collection_id and subset_name = $subset_name;
delete from subsets where collection_id = $collection_id and subset_name = $subset_name;

insert into subsets (collection_id, subset_name, rule, params, n_topics, n_pairs, created_at)
select
    $collection_id,
    $subset_name,
    $rule,
    $params,
    count(*),
    (select count(*) from qrels as q
     where q.collection_id = $collection_id and q.query_id in (select query_id from staged_subset_topics)),
    $created_at
from staged_subset_topics;

insert into subset_topics (collection_id, subset_name, query_id, rank, balance_score)
select $collection_id, $subset_name, query_id, rank, balance_score from staged_subset_topics;
