-- Journaled condition x round builds of persona_sets shard files (the first journaled of each), ready to merge;
-- request_id is the last step's request (the one whose answer decided the status).
create or replace temp table staged_outcomes as
select warehouse_id, run_id, condition, round, personality, keywords_raw, keywords, instruction_raw, instruction,
       keywords_request_id, instruction_request_id, request_id, status, reason, judged_at
from read_json($paths, format = 'newline_delimited', ignore_errors = true, columns = {
    warehouse_id: 'varchar', run_id: 'varchar', condition: 'varchar', round: 'integer', personality: 'varchar',
    keywords_raw: 'varchar', keywords: 'varchar', instruction_raw: 'varchar', instruction: 'varchar',
    keywords_request_id: 'varchar', instruction_request_id: 'varchar', request_id: 'varchar', status: 'varchar', reason: 'varchar',
    judged_at: 'timestamp'
})
where run_id is not null and status is not null and condition is not null and judged_at is not null
qualify row_number() over (partition by run_id, condition, round order by judged_at) = 1
