-- Per evaluation, qrels set and measure: how alike it ranks the systems to the human qrels, overall and on average
-- per topic, and its place among the evaluation's qrels sets (1 = the most human-like by Kendall's tau): with one
-- qrels set per personality, which personality's labels rank systems most like the humans'.
--   tau_rank  1 = the qrels set whose ranking is closest to the human one (by Kendall's tau) on that measure
--   n_topics_ranked  topics on which the per-topic Kendall's tau is defined
with overall as (
    select * from rank_agreement where query_id = 'all'
),

per_topic as (
    select
        evaluation_id, qrels_name, measure,
        avg(kendall_tau) as mean_topic_tau,
        count(kendall_tau) as n_topics_ranked
    from rank_agreement
    where query_id <> 'all'
    group by evaluation_id, qrels_name, measure
),

final as (
    select
        e.evaluation_id, e.collection_id, e.qrels_source, r.run_name, e.holes_id, o.qrels_name, o.measure,
        o.n_systems, o.kendall_tau, o.spearman_rho, o.tau_ap, t.mean_topic_tau, t.n_topics_ranked,
        rank() over (
            partition by o.evaluation_id, o.measure order by o.kendall_tau desc nulls last
        ) as tau_rank,
        e.created_at
    from overall as o
    inner join evaluations as e using (evaluation_id)
    left join judge_runs as r on r.run_id = e.judge_run_id
    left join per_topic as t using (evaluation_id, qrels_name, measure)
)

select * from final
