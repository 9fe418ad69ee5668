-- A stored trust study by id, with its judge run's name (none: the study is not stored yet).
select s.*, r.run_name
from trust_studies as s
left join judge_runs as r on r.run_id = s.judge_run_id
where s.study_id = $study_id
