-- The report's trust scatter: every study's systems with their ranks and PPI++ intervals (collection filter).
select study_id, system, human_score, llm_score, human_rank, llm_rank, method, estimate, lower, upper, covers_human
from trust_systems
where ($collection_id is null or collection_id = $collection_id) and method = 'ppi'
order by study_id, human_rank, system
