-- An assessor's progress on a plan: their labels, the plan's pairs, their mean seconds per label on the page.
select
    (select count(*) from assess_labels where plan_id = $plan_id and assessor = $assessor) as mine,
    (select count(*) from assess_pairs where plan_id = $plan_id) as total,
    (select avg(seconds) from assess_labels where plan_id = $plan_id and assessor = $assessor) as seconds
