-- needs: trust_studies, trust_scores, trust_intervals
-- Per trust study, system and interval method: the system's mean score under the full human qrels and the LLM's,
-- its rank under each (1 = best), the interval for its human score from the human sample, and whether the interval
-- covers the full human score (the human qrels exist here, so coverage can be checked).
--   human_score  the system's mean under the full human qrels (on the judge run's topics)
--   llm_score  the system's mean under the LLM qrels (the judge run's labels of the judged pool)
--   human_rank  1 = the best mean under the human qrels (ties share the better rank)
--   llm_rank  1 = the best mean under the LLM qrels
--   width  upper - lower
--   covers_human  lower <= the full human score <= upper
with means as (
    select
        study_id, system,
        max(value) filter (where qrels_name = 'human') as human_score,
        max(value) filter (where qrels_name = 'llm') as llm_score
    from trust_scores
    where query_id = 'all'
    group by study_id, system
),

ranked as (
    select
        *,
        rank() over (partition by study_id order by human_score desc) as human_rank,
        rank() over (partition by study_id order by llm_score desc) as llm_rank
    from means
),

final as (
    select
        s.study_id, s.collection_id, s.measure, r.system, r.human_score, r.llm_score, r.human_rank, r.llm_rank,
        i.method, i.estimate, i.lower, i.upper, i.upper - i.lower as width, i.n_sample,
        r.human_score between i.lower and i.upper as covers_human
    from ranked as r
    inner join trust_studies as s using (study_id)
    left join trust_intervals as i using (study_id, system)
)

select * from final
