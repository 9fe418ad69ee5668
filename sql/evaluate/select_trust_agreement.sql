-- A trust study's agreement statistics, in a fixed order.
select statistic, estimate, lower, upper, n_defined
from trust_agreement
where study_id = $study_id
order by case statistic when 'kendall_tau' then 1 when 'spearman_rho' then 2 else 3 end
