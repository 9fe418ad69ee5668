-- The rows of metrics_summary for the groups in metric_cells_snapshot (see snapshot_cells.sql), default first.
select *
from summary_from(cells := 'metric_cells_snapshot')
order by run_name, collection_id, subset_name, cot, confidence_method, personality <> 'default', personality
