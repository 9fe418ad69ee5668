-- What was built on one judge run's judgments and goes with it when it is deleted: evaluations whose LLM qrels came
-- from it, hole-filling experiments that used its labels, fuse runs that fused its judges. One row per dependent,
-- with the id the deletion uses.
select 'evaluation' as kind, evaluation_id as id, evaluation_id as name
from evaluations
where judge_run_id = $run_id and holes_id is null
union all
select 'holes experiment', holes_id, holes_id from holes_experiments where judge_run_id = $run_id
union all
select distinct 'fuse run', f.fuse_run_id, f.run_name
from fuse_judges as j
inner join fuse_runs as f using (fuse_run_id)
where j.run_name = $run_name
order by 1, 3
