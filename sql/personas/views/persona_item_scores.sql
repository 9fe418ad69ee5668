-- Every readable BFI-2 answer of a published personas check run, scored: item_score is the answer for a '+' item
-- and 6 - answer for a '-' (reverse-keyed) item, so that a higher score always means more of the domain.
with runs as (
    select check_run_id, run_name, personality_set, model, backend from persona_check_runs
    where status = 'published'
),

answers as (
    select * from persona_answers where status = 'ok'
),

final as (
    select
        r.run_name, r.personality_set, r.model, r.backend, a.personality, a.item_id, i.domain, i.facet, i.keyed,
        a.sample_index, a.answer,
        case when i.keyed = '-' then 6 - a.answer else a.answer end as item_score
    from answers as a
    inner join runs as r using (check_run_id)
    inner join bfi2_items as i using (item_id)
)

select * from final
