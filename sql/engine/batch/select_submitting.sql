-- Submissions recorded before the provider created them (a process killed between the two leaves one): each is
-- adopted (the provider's batch whose metadata carries its token) or created, never created twice.
select batch_id, round, input_file_id
from llm_batches
where model = $model and base_url = $base_url and status = 'submitting' and collected_at is null
order by submitted_at, batch_id
