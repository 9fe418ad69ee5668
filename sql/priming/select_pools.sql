-- The passages a trial may draw from (levels 0, 2 and 3) for the chosen topics, with the query and passage texts.
select q.query_id, qu.text as query_text, q.doc_id, q.relevance, p.text as passage_text
from qrels as q
inner join queries as qu on qu.collection_id = q.collection_id and qu.query_id = q.query_id
inner join passages as p on p.collection_id = q.collection_id and p.doc_id = q.doc_id
where q.collection_id = $collection_id
  and list_contains($query_ids, q.query_id)
  and q.relevance in (0, 2, 3)
order by q.query_id, q.doc_id
