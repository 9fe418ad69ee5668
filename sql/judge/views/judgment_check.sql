-- Why: a judgment must be derivable from the stored requests it references, so the warehouse never contradicts
-- itself (a confidence that differs from the raw answer it points to). Returns, for every judgment of the table
-- named, whether it is derivable and, if not, why:
-- - its label request is stored, asked of the run's model, and its answer reads as the judgment's label
--   (a label failure: the answer does not read; an error: the request or the confidence request was refused);
-- - verbalized: the confidence request is stored and reads as the judgment's confidence;
-- - self, certainty: label and confidence come from one request, which reads as both;
-- - logprob: the label as for verbalized (its distribution, read from the stored log-probabilities, is not re-derived here);
-- (format() is null when an argument is: every argument is coalesced, else a problem would read as none.)
-- - sampling: every vote's request is stored, and the label's share of the votes is the confidence. A vote that
--   failed for the judgment's run and was asked again since (by a retry or by another run) may count either way:
--   as the failure the run was given or as its current answer.
create or replace macro judgment_check(source_table) as table
with judged as (
    select * from query_table(source_table)
),

-- A failure stays derivable when its request has since been asked again and its answer replaced: the failure
-- the judgment's run was given is kept in llm_request_history ('failure re-asked').
failed_before as (
    select request_id, run_id, bool_or(parse_status = 'refused') as was_refused
    from llm_request_history
    where why = 'failure re-asked'
    group by all
),

-- One row per vote of a sampling judgment (unnested first: DuckDB 1.5 cannot left join on a lateral unnest).
vote_ids as (
    select
        j.run_id, j.query_id, j.doc_id, j.personality, j.cot, j.confidence_method, j.label,
        unnest(j.sample_request_ids) as vote_request_id
    from judged as j
    where j.confidence_method = 'sampling'
),

votes as (
    select
        u.run_id, u.query_id, u.doc_id, u.personality, u.cot, u.confidence_method,
        count(*) as n_votes,
        count(r.request_id) as n_found,
        count(*) filter (where r.parse_status = 'ok' and r.parsed_value = u.label) as n_for_label_most,
        count(*) filter (
            where r.parse_status = 'ok' and r.parsed_value = u.label and fb.request_id is null
        ) as n_for_label_least
    from vote_ids as u
    left join llm_requests as r on r.request_id = u.vote_request_id
    left join failed_before as fb on fb.request_id = u.vote_request_id and fb.run_id = u.run_id
    group by u.run_id, u.query_id, u.doc_id, u.personality, u.cot, u.confidence_method
),

checked as (
    select
        j.run_id, j.query_id, j.doc_id, j.personality, j.cot, j.confidence_method,
        case
            when lr.request_id is null and j.status <> 'error' then 'its label request is not stored'
            when j.status = 'error' then case
                when coalesce(lr.parse_status, '') <> 'refused' and coalesce(cr.parse_status, '') <> 'refused'
                     and not coalesce(lf.was_refused, false) and not coalesce(cf.was_refused, false)
                    then 'an error, but no stored request was refused'
            end
            when j.status = 'label_parse_failure' and j.confidence_method <> 'sampling' and lr.parse_status = 'ok'
                 and lf.request_id is null
                then 'a label failure, but its label request reads'
            when j.label is not null and j.confidence_method <> 'sampling'
                 and (lr.parse_status <> 'ok' or lr.parsed_value is distinct from j.label)
                then format('label {} but its request reads {}', j.label, coalesce(cast(lr.parsed_value as varchar), lr.parse_status, 'nothing'))
            when j.confidence_method = 'verbalized' and j.status = 'ok'
                 and (cr.request_id is null or cr.parse_status <> 'ok' or cr.parsed_value is distinct from j.confidence)
                then format('confidence {} but its request reads {}', coalesce(cast(j.confidence as varchar), 'null'), coalesce(cast(cr.parsed_value as varchar), cr.parse_status, 'nothing'))
            when j.confidence_method in ('self', 'certainty') and j.status = 'ok'
                 and (lr.parsed_confidence is distinct from j.confidence
                      or j.confidence_request_id is distinct from j.label_request_id)
                then format('confidence {} but its request reads {}', coalesce(cast(j.confidence as varchar), 'null'), coalesce(cast(lr.parsed_confidence as varchar), lr.parse_status, 'nothing'))
            when j.confidence_method = 'verbalized' and j.status = 'confidence_parse_failure'
                 and (cr.request_id is null or cr.parse_status = 'ok') and cf.request_id is null
                then 'a confidence failure, but its confidence request reads (or is not stored)'
            when j.confidence_method = 'sampling' and j.status = 'ok'
                 and (v.n_found is distinct from v.n_votes
                      or abs(j.confidence * v.n_votes / 100.0 - round(j.confidence * v.n_votes / 100.0)) > 1e-6
                      or round(j.confidence * v.n_votes / 100.0) not between v.n_for_label_least and v.n_for_label_most)
                then 'its votes are not all stored or do not give its label and confidence'
        end as problem
    from judged as j
    left join llm_requests as lr on lr.request_id = j.label_request_id
    left join llm_requests as cr on cr.request_id = j.confidence_request_id
    left join failed_before as lf on lf.request_id = j.label_request_id and lf.run_id = j.run_id
    left join failed_before as cf on cf.request_id = j.confidence_request_id and cf.run_id = j.run_id
    left join votes as v
        on v.run_id = j.run_id and v.query_id = j.query_id and v.doc_id = j.doc_id
       and v.personality = j.personality and v.cot = j.cot and v.confidence_method = j.confidence_method
)

select *, problem is null as is_derivable from checked
