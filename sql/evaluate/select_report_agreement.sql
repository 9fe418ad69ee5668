-- The report's 'Systems ranked' tables: every stored `peras evaluate` with LLM qrels (not a holes share), per qrels
-- set and measure, most human-like first; the collection filter applies ($collection_id null: every collection).
select
    evaluation_id, collection_id, qrels_source, run_name, qrels_name, measure, n_systems, kendall_tau, spearman_rho,
    tau_ap, mean_topic_tau, tau_rank, created_at
from rank_agreement_summary
where holes_id is null and ($collection_id is null or collection_id = $collection_id)
order by created_at, evaluation_id, measure, tau_rank, qrels_name
