-- The request costs (request_costs_from) of the groups asked for, once per read, into a temporary table beside
-- metric_cells_snapshot: method_comparison_from(cells := 'metric_cells_snapshot', costs := 'metric_costs_snapshot')
-- reads both. Parameters as snapshot_cells.sql (each null for no filter): run_names, collection_id, cot.
create or replace temp table metric_costs_snapshot as
with snapshot_facts as (
    select *
    from stg_judgment_facts
    where ($run_names is null or list_contains($run_names::varchar[], run_name))
        and ($collection_id is null or collection_id = $collection_id)
        and ($cot is null or cot = $cot)
)

select * from request_costs_from(facts := 'snapshot_facts')
