-- needs: recognize_runs, recognize_states
-- The evidence the recognizer quoted: per published recognize run, every answer read at a high or low level, with
-- the sentences it cited (evidence, by utterance_ids) and its analysis; is_own_dimension and is_intended_pole say
-- whether it is the persona's own dimension read at the persona's pole (the examples the report shows first).
with runs as (
    select recognize_run_id, run_name, judge_run from recognize_runs where status = 'published'
),

poles as (
    select personality, lower(trait) as trait, pole from personalities
),

final as (
    select
        r.run_name, r.judge_run, s.personality, s.dimension, s.query_id, s.doc_id, s.level,
        s.dimension = p.trait as is_own_dimension,
        s.dimension = p.trait and s.level = p.pole as is_intended_pole,
        s.utterance_ids, s.evidence, s.analysis, s.n_sentences
    from recognize_states as s
    inner join runs as r using (recognize_run_id)
    left join poles as p on p.personality = s.personality
    where s.status = 'ok' and s.level in ('high', 'low') and s.personality != 'check-set'
)

select * from final
