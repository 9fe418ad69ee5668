-- Answers of a run recorded as failures (unreadable after every regeneration, or refused).
select count(*) from pairwise_answers where pairwise_run_id = $pairwise_run_id and status != 'ok'
