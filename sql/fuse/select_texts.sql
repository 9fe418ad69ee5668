-- The query and passage texts of a collection's judged pairs (what the fuser is shown). Parameters: collection_id.
select query_id, doc_id, query_text, passage_text
from pair_texts
where collection_id = $collection_id
