-- The rows of metrics_oracle for the groups in metric_long_snapshot (see snapshot_long.sql).
select *
from oracle_of(metrics := 'metric_long_snapshot')
order by run_name, collection_id, subset_name, cot, confidence_method, metric
