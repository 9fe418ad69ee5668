-- Journaled judgments of shard files, one per item (the first journaled), ready to check and merge.
create or replace temp table staged_outcomes as
select
    warehouse_id, run_id, query_id, doc_id, personality, cot, confidence_method, label, confidence, expected_score,
    status, reason, label_request_id, confidence_request_id, judged_at, text_sha, sample_request_ids, label_dist,
    p_label, missing_labels, label_mass, label_token_index
from read_json($paths, format = 'newline_delimited', ignore_errors = true, columns = {
    warehouse_id: 'varchar', run_id: 'varchar', query_id: 'varchar', doc_id: 'varchar', personality: 'varchar',
    cot: 'boolean', confidence_method: 'varchar', label: 'integer', confidence: 'double',
    expected_score: 'double', status: 'varchar', reason: 'varchar', label_request_id: 'varchar',
    confidence_request_id: 'varchar', judged_at: 'timestamp', text_sha: 'varchar', sample_request_ids: 'varchar[]',
    label_dist: 'double[]', p_label: 'double', missing_labels: 'integer[]', label_mass: 'double',
    label_token_index: 'integer'
})
where run_id is not null and status is not null and judged_at is not null
qualify row_number() over (
    partition by run_id, query_id, doc_id, personality, cot, confidence_method order by judged_at) = 1
