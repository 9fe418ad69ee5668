-- Does each persona move its own trait, in the right direction, by enough? Per published check run, trait and
-- comparison ('high_vs_default': the high persona above default; 'default_vs_low': default above the low persona),
-- on the trait's domain score over the k sampled answers of each side:
--   difference    upper_score - lower_score (mean domain scores)
--   pooled_sd     sqrt(((n1 - 1) sd1^2 + (n2 - 1) sd2^2) / (n1 + n2 - 2)) of the two sides' sampled scores
--   effect_size   Cohen's d = difference / pooled_sd; null when pooled_sd is 0 or undefined
--   effect_ci_low   d - 1.96 sqrt((n1 + n2) / (n1 n2) + d^2 / (2 (n1 + n2)))
--   effect_ci_high  d + the same half-width (a 95% interval)
--   margin        the stated margin, 0.5 (a medium effect)
--   is_pass       effect_ci_low >= margin: the effect is at least medium with 95% confidence; when neither side's
--                 samples vary (pooled_sd 0), difference >= margin scale points
with scores as (
    select * from persona_domain_scores
),

poles as (
    select personality, trait, pole from personalities where pole in ('high', 'low')
),

pairs as (
    select
        s.run_name, s.personality_set, s.model, s.backend, p.trait,
        case p.pole when 'high' then 'high_vs_default' else 'default_vs_low' end as comparison,
        case p.pole when 'high' then s.personality else 'default' end as upper_personality,
        case p.pole when 'high' then 'default' else s.personality end as lower_personality
    from scores as s
    inner join poles as p on p.personality = s.personality and p.trait = s.domain
),

sides as (
    select
        p.*,
        u.mean_score as upper_score, u.sd_score as upper_sd, u.n_samples as n_upper,
        l.mean_score as lower_score, l.sd_score as lower_sd, l.n_samples as n_lower
    from pairs as p
    inner join scores as u
        on u.run_name = p.run_name and u.personality = p.upper_personality and u.domain = p.trait
    inner join scores as l
        on l.run_name = p.run_name and l.personality = p.lower_personality and l.domain = p.trait
),

pooled as (
    select
        *,
        upper_score - lower_score as difference,
        case when n_upper >= 2 and n_lower >= 2 then
            sqrt(((n_upper - 1) * upper_sd ^ 2 + (n_lower - 1) * lower_sd ^ 2) / (n_upper + n_lower - 2))
        end as pooled_sd
    from sides
),

effects as (
    select *, case when pooled_sd > 0 then difference / pooled_sd end as effect_size
    from pooled
),

intervals as (
    select
        *,
        1.96 * sqrt((n_upper + n_lower) / (n_upper * n_lower) + effect_size ^ 2 / (2 * (n_upper + n_lower)))
            as half_width
    from effects
),

final as (
    select
        run_name, personality_set, model, backend, trait, comparison, upper_personality, lower_personality,
        upper_score, lower_score, difference, pooled_sd, n_upper, n_lower, effect_size,
        effect_size - half_width as effect_ci_low,
        effect_size + half_width as effect_ci_high,
        0.5 as margin,
        case
            when pooled_sd > 0 then effect_size - half_width >= 0.5
            when pooled_sd = 0 then difference >= 0.5
        end as is_pass
    from intervals
)

select * from final
