-- The passages of a collection (its judged pool): the corpus a built run ranks.
select doc_id, text from passages where collection_id = $collection_id order by doc_id
