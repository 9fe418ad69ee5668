-- Whether a collection is in the warehouse.
select exists (select 1 from collections where collection_id = $collection_id) as has_collection
