-- Domain scores per published check run x personality x domain (12 items each, after reverse-keying): the greedy
-- answers' score, and the mean and standard deviation over the k sampled answers' scores.
with samples as (
    select * from persona_sample_scores
),

final as (
    select
        run_name, personality_set, model, backend, personality, domain,
        any_value(domain_score) filter (where sample_index = 0) as greedy_score,
        avg(domain_score) filter (where sample_index > 0) as mean_score,
        stddev_samp(domain_score) filter (where sample_index > 0) as sd_score,
        count(*) filter (where sample_index > 0) as n_samples
    from samples
    group by all
)

select * from final
