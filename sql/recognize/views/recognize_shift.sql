-- Per published recognize run x high/low persona x dimension: the persona's reading against default's on the same
-- dimension (default's answers are the control: no instruction, so they should read mostly uncertain).
--   is_own_dimension  the dimension is the persona's trait (HN: neuroticism); the others are off-target
--   intended_pole     the persona's pole (high, low) on its own dimension; null off-target
--   lean, default_lean  (n_high - n_low) / n_read of the persona and of default (recognize_shares)
--   shift             lean - default_lean: how far the persona moves the reading from default (null without default)
--   verdict           the persona's verdict (recognize_shares)
--   is_recognised     own dimension only: verdict = intended_pole
with shares as (
    select * from recognize_shares
),

poles as (
    select personality, lower(trait) as trait, pole from personalities where pole in ('high', 'low')
),

final as (
    select
        s.run_name, s.judge_run, s.recognizer_model, s.personality, s.dimension,
        s.dimension = p.trait as is_own_dimension,
        case when s.dimension = p.trait then p.pole end as intended_pole,
        s.n_read, s.share_high, s.share_low, s.share_uncertain,
        s.lean, d.lean as default_lean, s.lean - d.lean as shift,
        s.verdict,
        case when s.dimension = p.trait then s.verdict = p.pole end as is_recognised
    from shares as s
    inner join poles as p on p.personality = s.personality
    left join shares as d on d.run_name = s.run_name and d.dimension = s.dimension and d.personality = 'default'
)

select * from final
