-- A new plan (a plan extended by a later budget keeps its row).
insert into assess_plans (plan_id, plan_name, collection_id, judge_run_id, strategy, seed, n_pool, created_at)
values ($plan_id, $plan_name, $collection_id, $judge_run_id, $strategy, $seed, $n_pool, $created_at)
