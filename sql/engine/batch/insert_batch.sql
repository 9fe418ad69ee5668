-- A batch just created at the provider (or an input file written for vLLM's run-batch), live until collected.
insert into llm_batches (
    batch_id, run_id, kind, model, base_url, round, status, input_file_id, output_file_id, error_file_id, n_requests,
    submitted_at, updated_at, collected_at
)
values (
    $batch_id, $run_id, $kind, $model, $base_url, $round, $status, $input_file_id, null, null, $n_requests,
    $submitted_at, $submitted_at, null
)
