-- Per published recognize run: is each persona's intended pole recognised on its own dimension, and does default
-- read mostly uncertain (the control)?
--   n_personas      high/low personas read on their own dimension;  n_recognised  those whose verdict is the pole
--   accuracy        n_recognised / n_personas (the ten built-in personas: tenths)
--   mean_shift      mean |shift| of the own dimension from default, signed toward the pole (+: moved the right way)
--   mean_off_target_shift  mean |shift| on the other dimensions (how much a persona moves what it should not)
--   default_share_uncertain  default's read answers at 'uncertain' over every dimension asked (null: no default)
--   is_default_mostly_uncertain  default_share_uncertain > 0.5
with shift as (
    select * from recognize_shift
),

own as (
    select
        run_name, judge_run, recognizer_model,
        count(*) as n_personas,
        count(*) filter (where is_recognised) as n_recognised,
        avg(case intended_pole when 'high' then shift else -shift end) as mean_shift
    from shift
    where is_own_dimension
    group by all
),

off_target as (
    select run_name, avg(abs(shift)) as mean_off_target_shift from shift where not is_own_dimension group by all
),

control as (
    select run_name, sum(n_uncertain) / nullif(sum(n_read), 0) as default_share_uncertain
    from recognize_shares
    where personality = 'default'
    group by all
),

final as (
    select
        o.run_name, o.judge_run, o.recognizer_model, o.n_personas, o.n_recognised,
        o.n_recognised / o.n_personas as accuracy,
        o.mean_shift, t.mean_off_target_shift, c.default_share_uncertain,
        c.default_share_uncertain > 0.5 as is_default_mostly_uncertain
    from own as o
    left join off_target as t using (run_name)
    left join control as c using (run_name)
)

select * from final
