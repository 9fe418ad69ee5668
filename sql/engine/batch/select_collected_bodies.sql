-- The answers already collected for a run's exported batches, by custom_id: an import of the same file again
-- finds its lines here and changes nothing.
select l.custom_id, l.status_code, l.body
from llm_batch_lines as l
inner join llm_batches as b on b.batch_id = l.batch_id
where b.run_id = $run_id and b.base_url is null
