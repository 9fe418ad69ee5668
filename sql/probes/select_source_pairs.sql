-- Every judged pair of a collection (or of one of its topic subsets) with its texts, in a fixed order: what a probe
-- set is drawn from.
select q.query_id, q.doc_id, q.relevance, q.qrels_set, t.text as query_text, p.text as passage_text
from qrels as q
inner join queries as t on t.collection_id = q.collection_id and t.query_id = q.query_id
inner join passages as p on p.collection_id = q.collection_id and p.doc_id = q.doc_id
where
    q.collection_id = $collection_id
    and (
        $subset_name is null
        or q.query_id in (
            select query_id from subset_topics where collection_id = $collection_id and subset_name = $subset_name
        )
    )
order by q.query_id, q.doc_id
