-- Per holes experiment, share hidden and measure: the filled qrels' agreement with the full human qrels, with the
-- judge run and personality whose labels filled the holes.
with final as (
    select
        h.holes_id, h.collection_id, r.run_name, h.personality, h.seed, h.n_pairs, res.share, res.measure,
        res.n_hidden, res.hidden_accuracy, res.n_systems, res.kendall_tau, res.spearman_rho, res.tau_ap,
        res.mean_topic_tau, res.evaluation_id, h.created_at
    from holes_results as res
    inner join holes_experiments as h using (holes_id)
    left join judge_runs as r on r.run_id = h.judge_run_id
)

select * from final
