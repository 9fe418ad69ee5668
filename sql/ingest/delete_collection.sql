-- Remove a collection's published rows before its replacement is inserted (same transaction).
delete from subset_topics where collection_id = $collection_id;
delete from subsets where collection_id = $collection_id;
delete from qrels where collection_id = $collection_id;
delete from passages where collection_id = $collection_id;
delete from queries where collection_id = $collection_id;
delete from collections where collection_id = $collection_id;
