-- The study's Figure 3: the mean confidence of the judgments whose predicted label is 0, per human relevance
-- level, per run, setting and personality. A well-calibrated judge that says 0 is surer when the qrel is 0 too;
-- a label-0 judgment of a qrel-3 passage is a confident miss when its confidence is high. Only judgments with
-- label 0 and a confidence count (failures and missing confidences never do); a level where the personality never
-- said 0 has no row (the figure leaves a gap).
with cells as (
    select * from metric_cells_snapshot
    where label = 0
),

final as (
    select * from mean_confidence_from(cells := 'cells')
)

select * from final
order by collection_id, model, run_name, cot, confidence_method, personality, relevance
