-- The judge's own gate checks, over gate_items (its planned judgments with what the plan fixes) and run_judgments
-- (sql/judge/gate_items.sql): each judgment made on the current texts, of a pair of the collection, asked of the
-- run's model with the plan's parameters, derivable from the stored requests it references (judgment_check: the
-- label and confidence read again from them) and its values in range. One row per problem, naming the judgment.
with stale as (
    select 'judgment made on other texts' as problem,
           format('{} {} {} cot={} {}: text {} now {}', query_id, doc_id, personality, cot, confidence_method,
                  text_sha, current_sha) as detail
    from gate_items
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
    from gate_items as j
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
    from gate_items
    where (label is not null and label not between 0 and 3)
       or (confidence is not null and confidence not between 0 and 100)
       or (status = 'ok' and (label is null or confidence is null))
)

select * from stale
union all select * from foreign_pairs
union all select * from mismatched
union all select * from not_derivable
union all select * from out_of_range
