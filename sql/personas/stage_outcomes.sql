-- Journaled answers of personas shard files, one per personality x item x sample (the first journaled), ready to
-- check and merge.
create or replace temp table staged_outcomes as
select warehouse_id, run_id, personality, item_id, sample_index, answer, status, reason, request_id, judged_at
from read_json($paths, format = 'newline_delimited', ignore_errors = true, columns = {
    warehouse_id: 'varchar', run_id: 'varchar', personality: 'varchar', item_id: 'integer',
    sample_index: 'integer', answer: 'integer', status: 'varchar', reason: 'varchar', request_id: 'varchar',
    judged_at: 'timestamp'
})
where run_id is not null and status is not null and item_id is not null and judged_at is not null
qualify row_number() over (partition by run_id, personality, item_id, sample_index order by judged_at) = 1
