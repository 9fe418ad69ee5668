-- Cohen's kappa between the labels of every two personalities of a run and setting (the study's Figure 2), over
-- the pairs both labelled: pairwise_kappa (sql/metrics/views/pairwise_kappa.sql) with the run and setting as the
-- scope and the personality as the judge. Null when both used one and the same label (chance agreement is then
-- total). The diagonal (a = b) is 1 unless null. Pairs come from stg_judgment_facts, like every metric: only
-- pairs in the qrels count.
with runs as (
    select distinct run_id, run_name, collection_id, model
    from metric_cells_snapshot
),

personality_labels as (
    select
        {'run_id': run_id, 'cot': cot, 'confidence_method': confidence_method} as scope,
        personality as judge,
        query_id,
        doc_id,
        label
    from stg_judgment_facts
    where run_id in (select run_id from runs)
),

kappa as (
    select * from pairwise_kappa('personality_labels')
),

final as (
    select
        runs.run_name,
        runs.collection_id,
        runs.model,
        kappa.scope.cot as cot,
        kappa.scope.confidence_method as confidence_method,
        kappa.judge_a as personality_a,
        kappa.judge_b as personality_b,
        kappa.n_pairs,
        kappa.cohen_kappa
    from kappa
    inner join runs on runs.run_id = kappa.scope.run_id
)

select * from final
order by collection_id, model, run_name, cot, confidence_method, personality_a, personality_b
