-- The pairs of one pool with their texts, in a stable order (the judge flow's pairs when it judges a pool);
-- limit_pairs: the first that many (null: all).
select query_id, doc_id, query_text, passage_text, text_sha
from pool_pair_texts
where pool_id = $pool_id and collection_id = $collection_id
order by query_id, doc_id
limit $limit_pairs
