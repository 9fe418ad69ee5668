-- The judged pairs of a collection (or one of its topic subsets) with their texts, in a stable order.
-- limit_pairs: the first that many (null: all).
-- text_sha ties a judgment to the texts it was made on (sql/judge/views/pair_texts.sql computes it the same way).
select t.query_id, t.doc_id, t.query_text, t.passage_text, t.text_sha
from pair_texts_in($collection_id, $subset_name) as t
order by t.query_id, t.doc_id
limit $limit_pairs
