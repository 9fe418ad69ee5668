-- The subsets of the collections the study asks for, and whether each collection is ingested at all: the study
-- judges `published` where the collection has it, else `balanced` (tasks/study/grid.py), whatever ingest made.
with wanted as (
    select unnest($collection_ids::varchar[]) as collection_id
),

final as (
    select
        w.collection_id,
        exists (select 1 from collections as c where c.collection_id = w.collection_id) as is_ingested,
        s.subset_name
    from wanted as w
    left join subsets as s on s.collection_id = w.collection_id
)

select * from final order by collection_id, subset_name
