-- The fingerprint of the published collection, if any.
select fingerprint from collections where collection_id = $collection_id
