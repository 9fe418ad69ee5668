-- Each epilogue passage of a trial scored under both conditions: the pairs of the dependent t-test.
-- A trial whose HT or LT batch failed to parse contributes no pairs.
with epilogue as (
    select * from priming_scores where part = 'epilogue'
),

high as (
    select * from epilogue where condition = 'HT'
),

low as (
    select * from epilogue where condition = 'LT'
),

final as (
    select
        h.priming_run_id, h.run_name, h.model, h.query_id, h.trial, h.n_prologue, h.n_epilogue, h.personality,
        h.position - h.n_prologue as epilogue_position,
        h.doc_id, h.relevance,
        h.score as score_ht,
        l.score as score_lt
    from high as h
    inner join low as l
        on l.priming_run_id = h.priming_run_id and l.query_id = h.query_id and l.trial = h.trial
        and l.n_prologue = h.n_prologue and l.n_epilogue = h.n_epilogue and l.personality = h.personality
        and l.position = h.position and l.doc_id = h.doc_id
)

select * from final
