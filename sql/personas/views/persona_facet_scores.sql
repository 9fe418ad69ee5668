-- Facet scores per published check run x personality x facet (4 items each, after reverse-keying): the greedy
-- answers' score, and the mean and standard deviation over the k sampled answers' scores.
with per_sample as (
    select
        run_name, personality_set, model, backend, personality, domain, facet, sample_index,
        avg(item_score) as score
    from persona_item_scores
    group by all
),

final as (
    select * from sample_score_stats(scores := 'per_sample')
)

select * from final
