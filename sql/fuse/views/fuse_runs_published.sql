-- The published fuse runs, and the pairs every row of a run's comparison is scored on: the pairs asked of the fuser
-- when the run has a fuser (failures included, so that they are counted), else every pair the judges all answered.
--   n_asked     pairs the run asked the fuser about (answers stored, failures included)
--   has_fuser   the run has a fuser (model is not 'none'); false for a baselines-only run
with runs as (
    select * from fuse_runs where status = 'published'
),

asked as (
    select fuse_run_id, count(*) as n_asked from fuse_answers group by fuse_run_id
),

final as (
    select runs.*, coalesce(asked.n_asked, 0) as n_asked, runs.model <> 'none' as has_fuser
    from runs
    left join asked using (fuse_run_id)
)

select * from final
