-- needs: recognize_trait_runs, recognize_traits
-- The trait judgments (EPR-T) per published recognize traits run x personality x dimension, with their evidence:
-- the level, the ids of the answers cited (answer k is shown[k], 'query_id/doc_id'), one paragraph per facet and the
-- summary line (the paper's Figure 8 form); is_intended_pole for a persona's own dimension read at its pole.
with runs as (
    select recognize_trait_run_id, run_name, judge_run, model as recognizer_model from recognize_trait_runs
    where status = 'published'
),

poles as (
    select personality, lower(trait) as trait, pole from personalities
),

final as (
    select
        r.run_name, r.judge_run, r.recognizer_model, t.personality, t.dimension, t.status, t.reason, t.level,
        t.dimension = p.trait as is_own_dimension,
        t.dimension = p.trait and t.level = p.pole as is_intended_pole,
        t.answer_ids, t.shown, t.facet_paragraphs, t.summary
    from recognize_traits as t
    inner join runs as r using (recognize_trait_run_id)
    left join poles as p on p.personality = t.personality
)

select * from final
