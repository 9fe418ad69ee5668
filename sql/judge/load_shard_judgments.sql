-- Move journaled judgments from shard files into the warehouse; a judgment already stored is kept.
insert or ignore into judgments
select
    run_id, query_id, doc_id, personality, cot, confidence_method, label, confidence, expected_score, status,
    reason, label_request_id, confidence_request_id, judged_at
from read_json($paths, format = 'newline_delimited', ignore_errors = true, columns = {
    run_id: 'varchar', query_id: 'varchar', doc_id: 'varchar', personality: 'varchar', cot: 'boolean',
    confidence_method: 'varchar', label: 'integer', confidence: 'double', expected_score: 'double',
    status: 'varchar', reason: 'varchar', label_request_id: 'varchar', confidence_request_id: 'varchar',
    judged_at: 'timestamp'
})
where run_id is not null and status is not null
qualify row_number() over (
    partition by run_id, query_id, doc_id, personality, cot, confidence_method order by judged_at) = 1
