-- Domain scores per published check run x personality x domain (12 items each, after reverse-keying): the greedy
-- answers' score, and the mean and standard deviation over the k sampled answers' scores.
with samples as (
    select
        run_name, personality_set, model, backend, personality, domain, sample_index,
        domain_score as score
    from persona_sample_scores
),

final as (
    select * from sample_score_stats(scores := 'samples')
)

select * from final
