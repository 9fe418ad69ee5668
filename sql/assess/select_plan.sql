-- A plan by name: what fixes it, the judge run's name and how many pairs it holds.
select
    plans.plan_id, plans.plan_name, plans.collection_id, plans.judge_run_id, runs.run_name as judge_run_name,
    plans.strategy, plans.seed, plans.n_pool,
    (select count(*) from assess_pairs as pairs where pairs.plan_id = plans.plan_id) as n_pairs
from assess_plans as plans
left join judge_runs as runs on runs.run_id = plans.judge_run_id
where plans.plan_name = $plan_name
