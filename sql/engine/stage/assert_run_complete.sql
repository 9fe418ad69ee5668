-- The part of every LLM stage's gate that is the same for all, over gate_items (the stage's gate_items.sql joins the
-- items this call planned with their stored outcomes): every planned item has an outcome, and at most $max_share of
-- each failure group's outcomes (a personality, or a personality x prompt) are failures. One row per problem, with
-- its rank among a stage's problems (0 first, the stage's own are 1, 2 last).
with missing as (
    select 'missing' as problem,
        printf('%d planned %s have no outcome, e.g. %s', count(*), $items, min(item_name)) as detail, 0 as rank
    from gate_items
    where status is null
    having count(*) > 0
),

shares as (
    select failure_group, count(*) as n_outcomes, count(*) filter (where status != 'ok') as n_failures
    from gate_items
    where status is not null
    group by failure_group
),

failures as (
    select 'failure_share' as problem,
        printf('%s: %d of %d %s failed (share %.3f > %.3f)', failure_group, n_failures, n_outcomes, $items,
               n_failures / n_outcomes, $max_share) as detail,
        2 as rank
    from shares
    where n_failures / n_outcomes > $max_share
)

select * from missing
union all (select * from failures order by detail)
