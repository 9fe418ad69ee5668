-- The confidence methods compared (method_comparison_from over the report's snapshot of the cells and of the request
-- costs) for the run x CoT settings judged with two or more confidence methods: a setting judged one way has
-- nothing to compare and is left out. One row per personality x method; the report shows the chosen personalities.
select *
from method_comparison_from(cells := 'metric_cells_snapshot', costs := 'metric_costs_snapshot')
qualify count(distinct confidence_method) over (partition by run_id, cot) >= 2
order by collection_id, model, run_name, cot, personality, confidence_method
