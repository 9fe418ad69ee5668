-- Publish one evaluation: its row, its scores and its agreements (eval_new_scores, eval_new_agreement registered).
insert into evaluations (evaluation_id, collection_id, qrels_source, judge_run_id, holes_id, measures, systems, created_at)
values ($evaluation_id, $collection_id, $qrels_source, $judge_run_id, $holes_id, $measures, $systems, $created_at);

insert into system_scores (evaluation_id, qrels_name, system, measure, query_id, value)
select $evaluation_id, qrels_name, system, measure, query_id, value from eval_new_scores;

insert into rank_agreement (evaluation_id, qrels_name, measure, query_id, n_systems, kendall_tau, spearman_rho, tau_ap)
select $evaluation_id, qrels_name, measure, query_id, n_systems, kendall_tau, spearman_rho, tau_ap
from eval_new_agreement
