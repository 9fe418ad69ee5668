-- Whether a collection and (optionally) a subset of it exist.
select
    exists (select 1 from collections where collection_id = $collection_id) as has_collection,
    $subset_name is null or exists (
        select 1 from subsets where collection_id = $collection_id and subset_name = $subset_name) as has_subset
