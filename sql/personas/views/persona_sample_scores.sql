-- One domain score per published check run x personality x sample: the mean of the domain's readable item
-- scores (12 when every answer was read) in that sample. Sample 0 is the greedy answer, 1..k the sampled ones.
with scores as (
    select * from persona_item_scores
),

final as (
    select
        run_name, personality_set, model, backend, personality, domain, sample_index,
        avg(item_score) as domain_score,
        count(*) as n_items
    from scores
    group by all
)

select * from final
