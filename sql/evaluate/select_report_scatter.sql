-- The report's scatter points: per evaluation with LLM qrels, qrels set and measure, each system's mean score under
-- the human qrels (human_value) and under that qrels set (value).
with human as (
    select evaluation_id, system, measure, value as human_value
    from system_scores
    where qrels_name = 'human' and query_id = 'all'
),

final as (
    select s.evaluation_id, s.qrels_name, s.measure, s.system, h.human_value, s.value
    from system_scores as s
    inner join human as h using (evaluation_id, system, measure)
    inner join evaluations as e using (evaluation_id)
    where s.qrels_name <> 'human' and s.query_id = 'all' and e.holes_id is null
      and ($collection_id is null or e.collection_id = $collection_id)
)

select * from final order by evaluation_id, measure, qrels_name, system
