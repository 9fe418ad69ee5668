-- How many personalities label a judge run's pairs (the disagreement strategy needs two or more).
select count(distinct personality) as n_personalities
from judgments
where run_id = $run_id and label is not null
