-- Imported runs of the report: the file each came from and what its import did with integer labels outside 0-3
-- (out_of_range 'fail': label failures, never scored; 'clip': scored as 0 or 3, n_clipped of them).
with reports as (
    select * from import_reports
),

reported_runs as (
    select distinct run_id from metric_cells_snapshot
),

final as (
    select
        reports.run_name,
        reports.collection_id,
        reports.path,
        reports.out_of_range,
        reports.n_clipped,
        reports.n_bad_labels,
        reports.n_judgments,
        reports.n_scored
    from reports
    inner join reported_runs using (run_id)
)

select * from final
order by collection_id, run_name
