-- pairwise_kappa(labels): Cohen's kappa between every two judges of a scope on the pairs both labelled.
-- labels names a relation (a view, a table or a CTE of the calling query) with columns scope (any type: what is
-- compared within, e.g. a run and setting, or a collection), judge (varchar), query_id, doc_id, label; rows with a
-- null label (parse failures) are left out. One row per scope x judge_a x judge_b that share a labelled pair,
-- both orders and the diagonal included. With n_ij = pairs judge_a labelled i and judge_b labelled j, N = sum n_ij:
--   cohen_kappa = 1 - N (N - sum_i n_ii) / (N^2 - sum_k row_k col_k)
-- the formula of agreement_from.sql with judge_b in place of the human qrels; null when both judges used one and
-- the same label (chance agreement is then total). The diagonal is 1 unless null.
-- Used by metrics_judge_agreement (runs against runs) and the report's personality heatmaps.
create or replace macro pairwise_kappa(labels) as table
with kappa_input as materialized (
    select scope, judge, query_id, doc_id, label
    from query_table(labels)
    where label is not null
),

paired as (
    select
        a.scope,
        a.judge as judge_a,
        b.judge as judge_b,
        a.label as label_a,
        b.label as label_b,
        count(*)::hugeint as n
    from kappa_input as a
    inner join kappa_input as b using (scope, query_id, doc_id)
    group by all
),

levels as (
    select unnest(range(4))::integer as level
),

margins as (
    select
        paired.scope,
        paired.judge_a,
        paired.judge_b,
        levels.level,
        coalesce(sum(paired.n) filter (where paired.label_a = levels.level), 0) as n_a,
        coalesce(sum(paired.n) filter (where paired.label_b = levels.level), 0) as n_b
    from paired
    cross join levels
    group by all
),

chance as (
    select scope, judge_a, judge_b, sum(n_a * n_b) as chance_agree
    from margins
    group by all
),

totals as (
    select
        scope,
        judge_a,
        judge_b,
        sum(n) as n,
        coalesce(sum(n) filter (where label_a = label_b), 0) as n_agree
    from paired
    group by all
),

final as (
    select
        totals.scope,
        totals.judge_a,
        totals.judge_b,
        totals.n::bigint as n_pairs,
        cohen_kappa(totals.n, totals.n_agree, chance.chance_agree)::double as cohen_kappa
    from totals
    inner join chance using (scope, judge_a, judge_b)
)

select * from final
