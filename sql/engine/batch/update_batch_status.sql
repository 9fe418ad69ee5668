-- A batch's status as the provider reports it now (and its files, once it has them).
update llm_batches
set status = $status, output_file_id = $output_file_id, error_file_id = $error_file_id, updated_at = $updated_at
where batch_id = $batch_id
