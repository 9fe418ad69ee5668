-- Cohen's kappa between every two of the report's runs of a collection on their common labelled pairs
-- (judge_agreement_from: each run in its default/no-CoT setting, else its first), for the judge heatmap.
select *
from judge_agreement_from(cells := 'metric_cells_snapshot')
order by collection_id, run_name_a, run_name_b
