-- Delete the evaluations and hole-filling experiments built on one judge run (sql/judge/select_dependents.sql), in
-- the caller's transaction; its fuse runs are deleted as fuse runs (sql/engine/stage/delete_run.sql).
create or replace temp table doomed_evaluations as
select evaluation_id from evaluations
where judge_run_id = $run_id or holes_id in (select holes_id from holes_experiments where judge_run_id = $run_id);

delete from system_scores where evaluation_id in (select evaluation_id from doomed_evaluations);

delete from rank_agreement where evaluation_id in (select evaluation_id from doomed_evaluations);

delete from holes_results where holes_id in (select holes_id from holes_experiments where judge_run_id = $run_id);

delete from evaluations where evaluation_id in (select evaluation_id from doomed_evaluations);

delete from holes_experiments where judge_run_id = $run_id
