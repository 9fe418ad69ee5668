-- Evidence examples per published recognize run: for each persona, up to two answers read at its own pole on its
-- own dimension, with the sentences the recognizer quoted (view recognize_evidence).
select run_name, personality, dimension, level, query_id, doc_id, evidence
from recognize_evidence
where is_intended_pole
    and run_name in (select run_name from recognize_runs where status = 'published')
qualify row_number() over (partition by run_name, personality order by query_id, doc_id) <= 2
order by run_name, personality, query_id, doc_id
