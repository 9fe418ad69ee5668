-- Cohen's kappa between the labels of every two personalities of a run and setting (the study's Figure 2), over
-- the pairs both labelled. With n_ij = pairs that personality a labelled i and b labelled j, N = sum n_ij:
--   kappa = 1 - N (N - sum_i n_ii) / (N^2 - sum_k row_k col_k)
-- the formula of agreement_from.sql, with personality b in place of the human qrels. Null when N = 0 or when
-- both used one and the same label (chance agreement is then total). The diagonal (a = b) is 1 unless null.
-- Pairs come from stg_judgment_facts, like every metric: only pairs in the qrels count.
with runs as (
    select distinct run_id, run_name, collection_id, model
    from metric_cells_snapshot
),

facts as (
    select run_id, cot, confidence_method, personality, query_id, doc_id, label
    from stg_judgment_facts
    where label is not null and run_id in (select run_id from runs)
),

paired as (
    select
        a.run_id,
        a.cot,
        a.confidence_method,
        a.personality as personality_a,
        b.personality as personality_b,
        a.label as label_a,
        b.label as label_b,
        count(*)::hugeint as n
    from facts as a
    inner join facts as b using (run_id, cot, confidence_method, query_id, doc_id)
    group by all
),

levels as (
    select unnest(range(4))::integer as level
),

margins as (
    select
        paired.run_id,
        paired.cot,
        paired.confidence_method,
        paired.personality_a,
        paired.personality_b,
        levels.level,
        coalesce(sum(paired.n) filter (where paired.label_a = levels.level), 0) as n_a,
        coalesce(sum(paired.n) filter (where paired.label_b = levels.level), 0) as n_b
    from paired
    cross join levels
    group by all
),

chance as (
    select run_id, cot, confidence_method, personality_a, personality_b, sum(n_a * n_b) as chance_agree
    from margins
    group by all
),

totals as (
    select
        run_id,
        cot,
        confidence_method,
        personality_a,
        personality_b,
        sum(n) as n,
        coalesce(sum(n) filter (where label_a = label_b), 0) as n_agree
    from paired
    group by all
),

final as (
    select
        runs.run_name,
        runs.collection_id,
        runs.model,
        totals.cot,
        totals.confidence_method,
        totals.personality_a,
        totals.personality_b,
        totals.n::bigint as n_pairs,
        (case when totals.n * totals.n <> chance.chance_agree
            then 1 - (totals.n * (totals.n - totals.n_agree))::double
                / (totals.n * totals.n - chance.chance_agree)::double end)::double as cohen_kappa
    from totals
    inner join chance using (run_id, cot, confidence_method, personality_a, personality_b)
    inner join runs using (run_id)
)

select * from final
order by collection_id, model, run_name, cot, confidence_method, personality_a, personality_b
