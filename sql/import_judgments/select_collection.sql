-- Whether the collection exists, and how many qrels it has.
select count(*) as n_qrels
from qrels
where collection_id = $collection_id
