-- Mean confidence of all judgments per human relevance level, whatever label they gave, per run, setting and
-- personality, over the judgments that have a label and a confidence (what every confidence metric scores). Not
-- the study's Figure 3, which keeps only the judgments labelled 0 (select_confidence_of_predicted_zero.sql).
with cells as (
    select * from metric_cells_snapshot
    where label is not null
),

final as (
    select * from mean_confidence_from(cells := 'cells')
)

select * from final
order by collection_id, model, run_name, cot, confidence_method, personality, relevance
