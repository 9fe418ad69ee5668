-- The rows of metrics_method_comparison for the groups in metric_cells_snapshot, with the costs of
-- metric_costs_snapshot (see snapshot_cells.sql, snapshot_costs.sql), the methods of a group side by side.
select *
from method_comparison_from(cells := 'metric_cells_snapshot', costs := 'metric_costs_snapshot')
order by run_name, collection_id, subset_name, cot, personality <> 'default', personality, confidence_method
