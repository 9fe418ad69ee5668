-- The other runs of this run's name, when its gate found the name stored as more than one run (assert_one_run.sql):
-- withheld with it, so that no copy of a doubled run stays published and counted.
update {{ runs_table|ident }}
set status = 'failed_check', status_reason = $status_reason, finished_at = $finished_at
where run_name = (select run_name from {{ runs_table|ident }} where {{ run_id|ident }} = $run_id)
  and {{ run_id|ident }} <> $run_id and status = 'published'
