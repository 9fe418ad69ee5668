-- Why: a judge run publishes only if exactly its planned items are there, made on the current texts, each
-- derivable from the stored requests it references and asked of the run's model with the run's parameters,
-- values in range, and no personality of the whole run (this call's or an earlier one's) fails to parse more often
-- than the threshold. The planned items are the
-- registered tables planned_pairs (query_id, doc_id, text_sha) x planned_settings (personality, cot,
-- confidence_method, label_params). Returns one row per problem (detail names the item).
create or replace temp table run_judgments as
select * from judgments where run_id = $run_id;

with planned as (
    select p.query_id, p.doc_id, p.text_sha, s.personality, s.cot, s.confidence_method, s.label_params
    from planned_pairs as p cross join planned_settings as s
),

judged as (
    select j.*, p.label_params, p.text_sha as current_sha
    from run_judgments as j
    inner join planned as p using (query_id, doc_id, personality, cot, confidence_method)
),

missing as (
    select 'missing judgment' as problem,
           format('{} {} {} cot={} {}', p.query_id, p.doc_id, p.personality, p.cot, p.confidence_method) as detail
    from planned as p
    anti join run_judgments as j using (query_id, doc_id, personality, cot, confidence_method)
),

stale as (
    select 'judgment made on other texts' as problem,
           format('{} {} {} cot={} {}: text {} now {}', query_id, doc_id, personality, cot, confidence_method,
                  text_sha, current_sha) as detail
    from judged
    where text_sha is not null and text_sha <> current_sha
),

foreign_pairs as (
    select 'judgment of a pair not in the collection' as problem,
           format('{} {} {} cot={} {}', j.query_id, j.doc_id, j.personality, j.cot, j.confidence_method) as detail
    from run_judgments as j
    inner join judge_runs as r on r.run_id = j.run_id
    anti join qrels as q on q.collection_id = r.collection_id and q.query_id = j.query_id and q.doc_id = j.doc_id
    -- a pair judge-run pooled from run files (no human label) belongs to the collection too
    anti join pool_pairs as pp
        on pp.collection_id = r.collection_id and pp.query_id = j.query_id and pp.doc_id = j.doc_id
),

mismatched as (
    select 'asked another way than the run' as problem,
           format('{} {} {} cot={} {}: model {}, parameters {}', j.query_id, j.doc_id, j.personality, j.cot,
                  j.confidence_method, r.model, r.params) as detail
    from judged as j
    inner join llm_requests as r on r.request_id = j.label_request_id
    -- a sampling judgment may point at any of its votes (a refused one): votes differ from the plan only by seed
    where r.model <> $model
       or json_merge_patch(json(r.params), '{"seed": null}')::varchar
          <> json_merge_patch(json(j.label_params), '{"seed": null}')::varchar
),

not_derivable as (
    select 'judgment not derivable from its requests' as problem,
           format('{} {} {} cot={} {}: {}', query_id, doc_id, personality, cot, confidence_method, problem) as detail
    from judgment_check('run_judgments')
    where not is_derivable
),

out_of_range as (
    select 'value out of range' as problem,
           format('{} {} cot={} {}: label={} confidence={}', query_id, doc_id, cot, personality, label,
                  confidence) as detail
    from judged
    where (label is not null and label not between 0 and 3)
       or (confidence is not null and confidence not between 0 and 100)
       or (status = 'ok' and (label is null or confidence is null))
),

failure_share as (
    select 'parse failures above threshold' as problem,
           format('{} cot={} {}: {} of {} failed ({:.1f}% > {:.1f}%)', personality, cot, confidence_method,
                  count(*) filter (where status != 'ok'), count(*),
                  100.0 * count(*) filter (where status != 'ok') / count(*), 100.0 * $max_share) as detail
    from run_judgments  -- the whole run: a narrower call cannot publish a run whose other judgments failed
    group by personality, cot, confidence_method
    having count(*) filter (where status != 'ok') > $max_share * count(*)
),

-- A DuckLake warehouse has no keys: two writers committing the same judgment or request at once would both store
-- it (a DuckDB file's primary keys refuse the second). Either is a problem, never silently counted twice.
twice as (
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
),

final as (
    select * from missing
    union all select * from twice
    union all select * from requests_twice
    union all select * from stale
    union all select * from foreign_pairs
    union all select * from mismatched
    union all select * from not_derivable
    union all select * from out_of_range
    union all select * from failure_share
)

select * from final order by problem, detail
