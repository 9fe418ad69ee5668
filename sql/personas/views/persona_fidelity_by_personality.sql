-- One row per published check run x personality, to join to the judging metrics on model and personality (does a
-- more faithful persona judge differently?): the persona's own trait, its fidelity comparison against default
-- (persona_fidelity: effect_size, effect_ci_low, effect_ci_high, is_pass) and its largest off-target shift, the domain other
-- than its own that moved most from default's score (off_target_domain, off_target_shift: signed, in scale points).
-- The default personality has no trait: its fidelity columns are null.
--   effect_size   Cohen's d of the persona's comparison with default, toward its pole (persona_fidelity)
--   is_pass       that comparison passes (persona_fidelity.is_pass)
with fidelity as (
    select * from persona_fidelity
),

scores as (
    select * from persona_domain_scores
),

shifts as (
    select
        s.run_name, s.personality, s.domain,
        s.mean_score - d.mean_score as shift
    from scores as s
    inner join scores as d on d.run_name = s.run_name and d.personality = 'default' and d.domain = s.domain
),

own as (
    select m.run_name, m.personality_set, m.model, m.backend, m.personality, m.trait, m.pole
    from persona_domain_matrix as m
),

off_target as (
    select
        o.run_name, o.personality,
        arg_max(h.domain, abs(h.shift)) as off_target_domain,
        arg_max(h.shift, abs(h.shift)) as off_target_shift
    from own as o
    inner join shifts as h on h.run_name = o.run_name and h.personality = o.personality and h.domain <> o.trait
    where o.personality <> 'default'
    group by all
),

final as (
    select
        o.run_name, o.personality_set, o.model, o.backend, o.personality, o.trait, o.pole,
        f.effect_size, f.effect_ci_low, f.effect_ci_high, f.is_pass,
        t.off_target_domain, t.off_target_shift
    from own as o
    left join fidelity as f
        on f.run_name = o.run_name and f.trait = o.trait
       and o.personality in (f.upper_personality, f.lower_personality) and o.personality <> 'default'
    left join off_target as t on t.run_name = o.run_name and t.personality = o.personality
)

select * from final
