-- The rows of metrics_agreement for the groups in metric_cells_snapshot (see snapshot_cells.sql), default first.
select *
from agreement_from(cells := 'metric_cells_snapshot')
order by run_name, collection_id, subset_name, cot, confidence_method, personality <> 'default', personality
