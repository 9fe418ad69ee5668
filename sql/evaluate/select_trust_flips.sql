-- A trust study's flipped pairs, the largest human gap first.
select system_a, system_b, human_a, human_b, human_gap, llm_a, llm_b, llm_gap
from trust_flips
where study_id = $study_id
order by human_gap desc, system_a, system_b
