-- The cells (metrics_cells) of the runs the report covers, once, into a temporary table: every read after it
-- passes `cells := 'report_cells'` to the metric macros instead of scanning the judgments again.
-- Parameters: run_names (a list, or null for every run), collection_id (null for every collection).
create or replace temp table report_cells as
select *
from metrics_cells
where ($run_names is null or list_contains($run_names::varchar[], run_name))
    and ($collection_id is null or collection_id = $collection_id)
