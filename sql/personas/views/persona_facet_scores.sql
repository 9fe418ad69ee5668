-- Facet scores per published check run x personality x facet (4 items each, after reverse-keying): the greedy
-- answers' score, and the mean and standard deviation over the k sampled answers' scores.
with per_sample as (
    select
        run_name, personality_set, model, backend, personality, domain, facet, sample_index,
        avg(item_score) as facet_score
    from persona_item_scores
    group by all
),

final as (
    select
        run_name, personality_set, model, backend, personality, domain, facet,
        any_value(facet_score) filter (where sample_index = 0) as greedy_score,
        avg(facet_score) filter (where sample_index > 0) as mean_score,
        stddev_samp(facet_score) filter (where sample_index > 0) as sd_score,
        count(*) filter (where sample_index > 0) as n_samples
    from per_sample
    group by all
)

select * from final
