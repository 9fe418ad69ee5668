-- Register a judge run; it stays out of the metric views until its gate passes.
insert into judge_runs (run_id, run_name, source, task_type, collection_id, subset_name, model, backend, params,
                        created_at, status)
values ($run_id, $run_name, 'llm', 'pointwise', $collection_id, $subset_name, $model, $backend, $params,
        $created_at, 'running')
