-- Off-target shifts at a glance: one row per published check run x personality (11 for the built-in set), one
-- column per BFI-2 domain holding its mean_score over the sampled answers (persona_domain_scores). Does High
-- Agreeableness also move Neuroticism? Compare its row with default's.
with scores as (
    select * from persona_domain_scores
),

final as (
    select
        s.run_name, s.personality_set, s.model, s.backend, s.personality, p.trait, p.pole,
        any_value(s.mean_score) filter (where s.domain = 'Openness') as openness,
        any_value(s.mean_score) filter (where s.domain = 'Conscientiousness') as conscientiousness,
        any_value(s.mean_score) filter (where s.domain = 'Extraversion') as extraversion,
        any_value(s.mean_score) filter (where s.domain = 'Agreeableness') as agreeableness,
        any_value(s.mean_score) filter (where s.domain = 'Neuroticism') as neuroticism
    from scores as s
    left join personalities as p using (personality)
    group by all
)

select * from final
