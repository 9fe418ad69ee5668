-- The judged passages of a collection (or one of its topic subsets) with their grades and texts: what pairs are
-- drawn from (tasks/pairwise/draws.py), in a stable order.
select t.query_id, t.doc_id, q.relevance, t.query_text, t.passage_text
from pair_texts_in($collection_id, $subset_name) as t
inner join qrels as q on q.collection_id = t.collection_id and q.query_id = t.query_id and q.doc_id = t.doc_id
order by t.query_id, t.doc_id
