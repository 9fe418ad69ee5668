-- The pairwise answers that carry a confidence ('certainty', 'self', 'logp', 'mp'), on pairs with a right answer
-- (not a tie), shaped like metrics_cells so that the metric macros score them: relevance 1 and label 1 for a
-- correct choice, 0 for a wrong one (label = relevance iff correct); confidence_method is the prompt, cot false,
-- source 'pairwise'. E.g. `select * from calibration_from(cells := 'pairwise_cells')`, `certainty_split(80, 'pairwise_cells')`.
with facts as (
    select * from pairwise_facts where prompt in ('certainty', 'self', 'logp', 'mp') and truth != 'C'
),

final as (
    select
        pairwise_run_id as run_id,
        run_name,
        'pairwise' as source,
        collection_id,
        subset_name,
        model,
        personality,
        false as cot,
        prompt as confidence_method,
        1 as relevance,
        case when is_correct then 1 when choice is not null then 0 end as label,
        confidence,
        count(*) as n_judgments
    from facts
    group by all
)

select * from final
