-- The judge's copies check (replaces the engine's template): a DuckLake warehouse has no keys, so two writers
-- committing the same judgment or request at once would both store it (a DuckDB file's primary keys refuse the
-- second). Either is a problem, never silently counted twice.
with twice as (
    select 'judgment stored twice' as problem,
           format('{} {} {} cot={} {} ({} copies)', query_id, doc_id, personality, cot, confidence_method,
                  count(*)) as detail
    from run_judgments
    group by query_id, doc_id, personality, cot, confidence_method
    having count(*) > 1
),

requests_twice as (
    select 'request stored twice' as problem, format('{} ({} copies)', r.request_id, count(*)) as detail
    from llm_requests as r
    where r.request_id in (
        select label_request_id from run_judgments union select confidence_request_id from run_judgments
    )
    group by r.request_id
    having count(*) > 1
)

select * from twice
union all select * from requests_twice
