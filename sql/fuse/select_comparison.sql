-- One fuse run's comparison (fuse_comparison) and its disagreement counts (fuse_disagreement), for the CLI.
select row_order, row_kind, row_name, detail, metric, value, delta
from fuse_comparison
where fuse_run_id = $fuse_run_id
order by row_order, row_name, metric
