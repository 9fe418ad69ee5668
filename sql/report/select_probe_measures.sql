-- The report's probes table: the gaming-probe measures (probe_measures, sql/probes/views) of the report's runs that
-- judged a probe collection, attacks first, then controls; none when no such run is among them.
with chosen as (
    select distinct run_id from metric_cells_snapshot
),

measures as (
    select * from probe_measures
),

final as (
    select m.* exclude (run_id)  -- every measure of the view, in its order
    from measures as m
    inner join chosen using (run_id)
)

select * from final
order by run_name, role, kind, personality, cot, confidence_method
