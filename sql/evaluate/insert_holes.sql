-- Publish one holes experiment and its results per share and measure (holes_new_results registered).
insert into holes_experiments (
    holes_id, collection_id, judge_run_id, personality, seed, n_pairs, n_pairs_unlabelled, created_at
)
values ($holes_id, $collection_id, $judge_run_id, $personality, $seed, $n_pairs, $n_pairs_unlabelled, $created_at);

insert into holes_results (
    holes_id, share, measure, evaluation_id, n_hidden, hidden_accuracy, n_systems, kendall_tau, spearman_rho, tau_ap,
    mean_topic_tau
)
select
    $holes_id, share, measure, evaluation_id, n_hidden, hidden_accuracy, n_systems, kendall_tau, spearman_rho, tau_ap,
    mean_topic_tau
from holes_new_results
