-- The cells (metrics_cells) of the groups asked for, computed once per read into a temporary table: every metric
-- read after it (`select * from agreement_from(cells := 'metric_cells_snapshot')`, ...) uses these instead of
-- scanning the judgments again. `peras metrics` and the report both take their snapshot here.
-- Parameters, each null for no filter: run_names (a list; `peras metrics --run` passes a list of one),
-- collection_id, cot. Filters are whole-group attributes, so each group's metrics are those of the views.
create or replace temp table metric_cells_snapshot as
select *
from metrics_cells
where ($run_names is null or list_contains($run_names::varchar[], run_name))
    and ($collection_id is null or collection_id = $collection_id)
    and ($cot is null or cot = $cot)
