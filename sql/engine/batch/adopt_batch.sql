-- A submission recorded before the provider created it ('submitting', batch_id submitting-<token>) takes the id and
-- status of the batch the provider made for it (found by the token in the batch's metadata, or created now).
update llm_batches
set batch_id = $batch_id, status = $status, updated_at = $updated_at
where batch_id = $pending_id;

update llm_batch_requests
set batch_id = $batch_id
where batch_id = $pending_id;
