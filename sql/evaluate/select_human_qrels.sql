-- The human qrels of a collection (every qrels set), the reference every ranking is compared with.
select query_id, doc_id, relevance::bigint as relevance
from qrels
where collection_id = $collection_id
order by query_id, doc_id
