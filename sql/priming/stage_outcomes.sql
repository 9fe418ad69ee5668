-- Journaled batch outcomes of priming shard files, one per batch (the first journaled), ready to check and merge.
create or replace temp table staged_outcomes as
select
    warehouse_id, run_id, query_id, trial, n_prologue, n_epilogue, personality, condition, doc_ids, scores, status,
    reason, request_id, judged_at
from read_json($paths, format = 'newline_delimited', ignore_errors = true, columns = {
    warehouse_id: 'varchar', run_id: 'varchar', query_id: 'varchar', trial: 'integer', n_prologue: 'integer',
    n_epilogue: 'integer', personality: 'varchar', condition: 'varchar', doc_ids: 'varchar[]',
    scores: 'integer[]', status: 'varchar', reason: 'varchar', request_id: 'varchar', judged_at: 'timestamp'
})
where run_id is not null and status is not null and doc_ids is not null and judged_at is not null
qualify row_number() over (
    partition by run_id, query_id, trial, n_prologue, n_epilogue, personality, condition order by judged_at) = 1
