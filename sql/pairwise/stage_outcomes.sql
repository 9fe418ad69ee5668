-- Journaled pairwise answers of shard files, one per item (the first journaled), ready to check and merge.
create or replace temp table staged_outcomes as
select
    warehouse_id, run_id, query_id, doc_1, doc_2, relevance_1, relevance_2, personality, prompt, position, choice,
    confidence, status, reason, request_id, judged_at
from read_json($paths, format = 'newline_delimited', ignore_errors = true, columns = {
    warehouse_id: 'varchar', run_id: 'varchar', query_id: 'varchar', doc_1: 'varchar', doc_2: 'varchar',
    relevance_1: 'integer', relevance_2: 'integer', personality: 'varchar', prompt: 'varchar',
    position: 'varchar', choice: 'varchar', confidence: 'double', status: 'varchar', reason: 'varchar',
    request_id: 'varchar', judged_at: 'timestamp'
})
where run_id is not null and status is not null and position is not null and judged_at is not null
qualify row_number() over (
    partition by run_id, query_id, doc_1, doc_2, personality, prompt, position order by judged_at) = 1
