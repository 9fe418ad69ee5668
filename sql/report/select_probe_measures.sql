-- The report's probes table: the gaming-probe measures (probe_measures, sql/probes/views) of the report's runs that
-- judged a probe collection, attacks first, then controls; none when no such run is among them.
with chosen as (
    select distinct run_id from metric_cells_snapshot
),

measures as (
    select * from probe_measures
),

final as (
    select
        m.run_name,
        m.source_collection_id,
        m.kind,
        m.role,
        m.personality,
        m.cot,
        m.confidence_method,
        m.n_copies,
        m.n_attackable,
        m.n_success,
        m.attack_success_rate,
        m.mean_label_shift_targets,
        m.mean_label_shift_relevant,
        m.mean_confidence_shift,
        m.auroc_low_confidence,
        m.auroc_disagreement
    from measures as m
    inner join chosen using (run_id)
)

select * from final
order by run_name, role, kind, personality, cot, confidence_method
