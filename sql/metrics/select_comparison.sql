-- The rows of metrics_vs_default for the groups in metric_long_snapshot (see snapshot_long.sql), default first.
select *
from vs_default_of(metrics := 'metric_long_snapshot')
order by run_name, collection_id, subset_name, cot, confidence_method, personality <> 'default', personality, metric
