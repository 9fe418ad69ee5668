-- Answers of a check run recorded as failures (unreadable after the regenerations, or refused).
select count(*) from persona_answers where check_run_id = $check_run_id and status <> 'ok'
