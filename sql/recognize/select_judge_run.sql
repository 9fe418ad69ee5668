-- A judge run by name: its model and how many of its judgments were asked with CoT (none: nothing to recognize).
select r.run_name, r.model, count(j.run_id) filter (where j.cot) as n_cot
from judge_runs as r
left join judgments as j using (run_id)
where r.run_name = $judge_run
group by all
