-- The judgments of one run per personality, CoT setting and confidence method: how many, how many failed.
select
    personality,
    cot,
    confidence_method,
    count(*) as n_judgments,
    count(*) filter (where status = 'ok') as n_ok,
    count(*) filter (where status <> 'ok') as n_failures
from judgments
where run_id = $run_id
group by personality, cot, confidence_method
order by personality = 'default' desc, personality, cot, confidence_method
