-- The rows of metrics_thresholds for the groups in metric_cells_snapshot (see snapshot_cells.sql), default first.
select *
from certainty_split(80, cells := 'metric_cells_snapshot')
order by run_name, collection_id, subset_name, cot, confidence_method, personality <> 'default', personality
