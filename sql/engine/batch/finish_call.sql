-- A batch-mode call found nothing waiting: the batch-poll deployment does not call the run again.
update llm_batch_calls set finished_at = $finished_at where run_id = $run_id
