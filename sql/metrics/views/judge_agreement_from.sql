-- judge_agreement_from(cells): Cohen's kappa between the labels of every two runs of a collection on the pairs
-- both labelled (pairwise_kappa.sql), one setting per run: its `default` personality without CoT when it has one,
-- else its first group in the order default personality first, no CoT before CoT, then confidence method and
-- personality by name. cells (shaped like metrics_cells) chooses the runs and their groups; the labels come from
-- stg_judgment_facts, so only pairs in the qrels count, as in every metric. Runs that share no labelled pair get
-- no row; the diagonal (a run against itself) is 1 unless the run used a single label.
create or replace macro judge_agreement_from(cells := 'metrics_cells') as table
with judge_input as (
    select distinct run_id, run_name, collection_id, personality, cot, confidence_method
    from query_table(cells)
),

chosen as (
    select *
    from judge_input
    qualify row_number() over (
        partition by run_id order by personality <> 'default', cot, confidence_method, personality
    ) = 1
),

run_labels as (
    select
        facts.collection_id as scope,
        facts.run_id as judge,
        facts.query_id,
        facts.doc_id,
        facts.label
    from stg_judgment_facts as facts
    inner join chosen using (run_id, personality, cot, confidence_method)
),

kappa as (
    select * from pairwise_kappa('run_labels')
),

final as (
    select
        kappa.scope as collection_id,
        a.run_name as run_name_a,
        b.run_name as run_name_b,
        a.run_id as run_id_a,
        b.run_id as run_id_b,
        a.personality as personality_a,
        a.cot as cot_a,
        a.confidence_method as confidence_method_a,
        b.personality as personality_b,
        b.cot as cot_b,
        b.confidence_method as confidence_method_b,
        kappa.n_pairs,
        kappa.cohen_kappa
    from kappa
    inner join chosen as a on a.run_id = kappa.judge_a
    inner join chosen as b on b.run_id = kappa.judge_b
)

select * from final
