-- mean_confidence_from(cells): the mean confidence of the judgments in cells (shaped like metrics_cells) per run,
-- setting, personality and human relevance level, with how many judgments it averages. The caller chooses which
-- judgments count by filtering the cells (the report's confidence figures: every judgment with a label and a
-- confidence, or only those labelled 0); a cell without a confidence is not averaged.
create or replace macro mean_confidence_from(cells := 'metrics_cells') as table
with confidence_input as (
    select * from query_table(cells)
    where confidence is not null
),

final as (
    select
        run_name, collection_id, model, cot, confidence_method, personality, relevance,
        sum(n_judgments)::bigint as n_judgments,
        (sum(n_judgments * confidence) / sum(n_judgments))::double as mean_confidence
    from confidence_input
    group by all
)

select * from final
