-- The personas gate, over the answers this call planned (persona_planned): every one stored, and at most
-- $max_share of each personality's answers failed (a persona whose answers are mostly unreadable has no score to
-- trust). One row per problem; none means the run may be published.
with planned as (
    select * from persona_planned
),

stored as (
    select * from persona_answers where check_run_id = $check_run_id
),

joined as (
    select
        p.personality, p.item_id, p.sample_index, s.status,
        printf('%s item %d sample %d', p.personality, p.item_id, p.sample_index) as answer_name
    from planned as p
    left join stored as s using (personality, item_id, sample_index)
),

missing as (
    select 'missing' as problem,
        printf('%d planned answers have no outcome, e.g. %s', count(*), min(answer_name)) as detail
    from joined
    where status is null
    having count(*) > 0
),

shares as (
    select personality, count(*) as n_answers, count(*) filter (where status != 'ok') as n_failures
    from joined
    where status is not null
    group by personality
),

failures as (
    select 'failure_share' as problem,
        printf('%s: %d of %d answers failed (share %.3f > %.3f)', personality, n_failures, n_answers,
               n_failures / n_answers, $max_share) as detail
    from shares
    where n_failures / n_answers > $max_share
),

final as (
    select * from missing
    union all (select * from failures order by detail)
)

select * from final
