-- Every published fuse run's comparison (fuse_comparison) for the report, of one collection or all.
-- Parameters: collection_id.
select fuse_run_id, run_name, collection_id, row_order, row_kind, row_name, detail, metric, value, delta
from fuse_comparison
where $collection_id is null or collection_id = $collection_id
order by run_name, row_order, row_name, metric
