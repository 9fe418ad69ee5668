-- How a batch-mode run was called (its flow and parameters): the batch-poll deployment calls it again.
delete from llm_batch_calls where run_id = $run_id;

insert into llm_batch_calls (run_id, kind, flow_name, parameters, base_url, model, recorded_at, finished_at)
values ($run_id, $kind, $flow_name, $parameters, $base_url, $model, $recorded_at, null);
