-- The pairwise gate, over the items this call planned (pairwise_planned): every one stored with the grades it was
-- drawn with, every read verdict well-formed for its prompt (A or B, C only for 'tie'; a confidence in range for
-- 'certainty' and 'self'), and at most $max_share of each personality x prompt's answers failed.
-- One row per problem; none means the run's measures may be published.
with planned as (
    select * from pairwise_planned
),

stored as (
    select * from pairwise_answers where pairwise_run_id = $pairwise_run_id
),

joined as (
    select
        p.query_id, p.doc_1, p.doc_2, p.personality, p.prompt, p.position,
        p.relevance_1 as planned_relevance_1, p.relevance_2 as planned_relevance_2,
        s.relevance_1, s.relevance_2, s.choice, s.confidence, s.status,
        printf('topic %s %s/%s %s %s %s', p.query_id, p.doc_1, p.doc_2, p.personality, p.prompt, p.position)
            as item_name
    from planned as p
    left join stored as s using (query_id, doc_1, doc_2, personality, prompt, position)
),

missing as (
    select 'missing' as problem, printf('%d planned answers are not stored, e.g. %s', count(*), min(item_name))
        as detail
    from joined
    where status is null
    having count(*) > 0
),

redrawn as (
    select 'redrawn' as problem,
        printf('%d stored answers have other grades than their draw (were the qrels re-ingested?), e.g. %s',
               count(*), min(item_name)) as detail
    from joined
    where status is not null
      and (relevance_1 != planned_relevance_1 or relevance_2 != planned_relevance_2)
    having count(*) > 0
),

malformed as (
    select 'malformed' as problem,
        printf('%d read answers lack a verdict or confidence their prompt asks for, e.g. %s', count(*),
               min(item_name)) as detail
    from joined
    where status = 'ok'
      and (choice is null
           or (choice = 'C' and prompt != 'tie')
           or (prompt = 'certainty' and (confidence is null or confidence < 1 or confidence > 100))
           or (prompt = 'self' and (confidence is null or confidence < 0 or confidence > 100)))
    having count(*) > 0
),

shares as (
    select personality, prompt, count(*) as n_answers, count(*) filter (where status != 'ok') as n_failures
    from joined
    where status is not null
    group by personality, prompt
),

failures as (
    select 'failure_share' as problem,
        printf('%s %s: %d of %d answers failed (share %.3f > %.3f)', personality, prompt, n_failures, n_answers,
               n_failures / n_answers, $max_share) as detail
    from shares
    where n_failures / n_answers > $max_share
),

final as (
    select * from missing
    union all select * from redrawn
    union all select * from malformed
    union all (select * from failures order by detail)
)

select * from final
