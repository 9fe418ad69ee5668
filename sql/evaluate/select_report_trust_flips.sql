-- The report's flipped pairs: every study's pairs whose order flips, the largest human gap first (collection filter).
select f.study_id, f.system_a, f.system_b, f.human_gap, f.llm_gap
from trust_flips as f
inner join trust_studies as s using (study_id)
where $collection_id is null or s.collection_id = $collection_id
order by f.study_id, f.human_gap desc, f.system_a, f.system_b
