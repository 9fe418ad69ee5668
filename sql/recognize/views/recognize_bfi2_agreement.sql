-- Per published recognize run x high/low persona: does the recognizer's verdict on the persona's own dimension
-- agree with the BFI-2 check's verdict (persona_fidelity) for the same persona and the same model (the judge run's),
-- from the latest published check run of that model?
--   is_recognised   recognize_shift's own-dimension verdict equals the pole
--   check_run       the BFI-2 check run compared (null: no published check of that model)
--   is_bfi2_pass    the persona's comparison passes (high_vs_default for a high persona, default_vs_low for a low)
--   agrees          is_recognised = is_bfi2_pass (null without a check)
with own as (
    select s.*, j.model as judge_model
    from recognize_shift as s
    inner join judge_runs as j on j.run_name = s.judge_run
    where s.is_own_dimension
),

checks as (
    select f.run_name as check_run, f.model, lower(f.trait) as trait, f.comparison, f.is_pass, c.created_at
    from persona_fidelity as f
    inner join persona_check_runs as c on c.run_name = f.run_name
),

latest as (
    select * from checks
    qualify row_number() over (partition by model, trait, comparison order by created_at desc, check_run) = 1
),

final as (
    select
        o.run_name, o.judge_run, o.judge_model, o.personality, o.dimension, o.intended_pole, o.verdict,
        o.is_recognised, l.check_run, l.is_pass as is_bfi2_pass, o.is_recognised = l.is_pass as agrees
    from own as o
    left join latest as l
        on l.model = o.judge_model and l.trait = o.dimension
        and l.comparison = case o.intended_pole when 'high' then 'high_vs_default' else 'default_vs_low' end
)

select * from final
