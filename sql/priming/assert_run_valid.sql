-- The priming gate, over the batches this call planned (priming_planned): every one stored as it was drawn,
-- the scores of parsed batches well-formed, and at most $max_share of each personality's batches failed.
-- One row per problem; none means the run's statistics may be published.
with planned as (
    select * from priming_planned
),

stored as (
    select * from priming_batches where priming_run_id = $priming_run_id
),

joined as (
    select
        p.query_id, p.trial, p.n_prologue, p.n_epilogue, p.personality, p.condition,
        p.doc_ids as planned_doc_ids, s.doc_ids, s.scores, s.status,
        printf('topic %s trial %d PL=%d EL=%d %s %s', p.query_id, p.trial, p.n_prologue, p.n_epilogue,
               p.personality, p.condition) as batch_name
    from planned as p
    left join stored as s using (query_id, trial, n_prologue, n_epilogue, personality, condition)
),

missing as (
    select 'missing' as problem, printf('%d planned batches have no outcome, e.g. %s', count(*), min(batch_name))
        as detail
    from joined
    where status is null
    having count(*) > 0
),

redrawn as (
    select 'redrawn' as problem,
        printf('%d stored batches differ from their draw (was the collection re-ingested?), e.g. %s', count(*),
               min(batch_name)) as detail
    from joined
    where status is not null and doc_ids != planned_doc_ids
    having count(*) > 0
),

malformed as (
    select 'malformed' as problem,
        printf('%d parsed batches lack a 0-3 score per passage, e.g. %s', count(*), min(batch_name)) as detail
    from joined
    where status = 'ok'
      and (scores is null or len(scores) != len(doc_ids) or list_min(scores) < 0 or list_max(scores) > 3)
    having count(*) > 0
),

shares as (
    select personality, count(*) as n_batches, count(*) filter (where status != 'ok') as n_failures
    from joined
    where status is not null
    group by personality
),

failures as (
    select 'failure_share' as problem,
        printf('%s: %d of %d batches failed (share %.3f > %.3f)', personality, n_failures, n_batches,
               n_failures / n_batches, $max_share) as detail
    from shares
    where n_failures / n_batches > $max_share
),

final as (
    select * from missing
    union all select * from redrawn
    union all select * from malformed
    union all (select * from failures order by detail)
)

select * from final
