-- Replace whatever holds this run name by the imported run (import_rows), in the caller's transaction.
delete from judgments
where run_id in (select run_id from judge_runs where run_name = $run_name);

delete from import_reports
where run_name = $run_name;

delete from judge_runs
where run_name = $run_name;

insert into judge_runs (
    run_id, run_name, source, task_type, collection_id, subset_name, model, backend, params, created_at
)
values ($run_id, $run_name, 'import', 'pointwise', $collection_id, null, $model, 'import', $params, $imported_at);

insert into judgments (
    run_id, query_id, doc_id, personality, cot, confidence_method, label, confidence, expected_score,
    status, reason, label_request_id, confidence_request_id, judged_at
)
select
    $run_id, query_id, doc_id, 'default', false, $confidence_method, label, confidence, null,
    status, reason, null, null, $imported_at
from import_rows;

insert into import_reports (
    run_id, run_name, collection_id, path, sha256, fingerprint, n_lines, n_judgments, n_scored, n_bad_labels,
    n_bad_confidences, n_duplicates, n_not_in_qrels, n_missing_from_file, examples, imported_at, out_of_range,
    n_clipped
)
values (
    $run_id, $run_name, $collection_id, $path, $sha256, $fingerprint, $n_lines, $n_judgments, $n_scored,
    $n_bad_labels, $n_bad_confidences, $n_duplicates, $n_not_in_qrels, $n_missing_from_file, $examples,
    $imported_at, $out_of_range, $n_clipped
);
