-- The label groups a judge run holds: per CoT setting and confidence method, the personalities and labels.
select cot, confidence_method, count(distinct personality) as n_personalities, count(label) as n_labels
from judgments
where run_id = $run_id
group by cot, confidence_method
order by cot, confidence_method
