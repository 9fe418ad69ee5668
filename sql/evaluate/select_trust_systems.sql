-- A trust study's systems with their scores, ranks and intervals (view trust_systems), best human score first.
select system, human_score, llm_score, human_rank, llm_rank, method, estimate, lower, upper, covers_human
from trust_systems
where study_id = $study_id
order by human_score desc, system, method
