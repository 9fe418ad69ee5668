-- Journaled fuser answers of shard files, one per pair (the first journaled), ready to check and merge.
create or replace temp table staged_outcomes as
select warehouse_id, run_id, query_id, doc_id, judge_order, label, confidence, status, reason, request_id, judged_at
from read_json($paths, format = 'newline_delimited', ignore_errors = true, columns = {
    warehouse_id: 'varchar', run_id: 'varchar', query_id: 'varchar', doc_id: 'varchar', judge_order: 'varchar',
    label: 'integer', confidence: 'double', status: 'varchar', reason: 'varchar', request_id: 'varchar',
    judged_at: 'timestamp'
})
where run_id is not null and status is not null and judge_order is not null and judged_at is not null
qualify row_number() over (partition by run_id, query_id, doc_id order by judged_at) = 1
