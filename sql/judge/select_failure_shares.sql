-- Parse-failure share per personality, setting and method of one run (reported after every judge run).
select
    personality, cot, confidence_method,
    count(*) as n_items,
    count(*) filter (where status != 'ok') as n_failures,
    count(*) filter (where status != 'ok') / count(*) as failure_share
from judgments
where run_id = $run_id
group by all
order by personality, cot, confidence_method
