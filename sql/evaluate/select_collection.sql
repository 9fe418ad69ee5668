-- Whether a collection is in the warehouse (evaluations need its qrels).
select count(*) > 0 as has_collection from collections where collection_id = $collection_id
