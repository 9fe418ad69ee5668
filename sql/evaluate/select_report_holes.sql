-- The report's 'Hole filling' tables: every holes experiment's results per share and measure (collection filter).
select
    holes_id, collection_id, run_name, personality, seed, n_pairs, share, measure, n_hidden, hidden_accuracy,
    n_systems, kendall_tau, spearman_rho, tau_ap, mean_topic_tau, created_at
from holes_curve
where $collection_id is null or collection_id = $collection_id
order by created_at, holes_id, measure, share
