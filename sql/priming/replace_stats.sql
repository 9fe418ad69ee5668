-- Publish a run's statistics (staged_tests, staged_indexes), replacing those of an earlier call.
delete from priming_tests where priming_run_id = $priming_run_id;
insert into priming_tests by name select $priming_run_id as priming_run_id, * from staged_tests;
delete from priming_indexes where priming_run_id = $priming_run_id;
insert into priming_indexes by name select $priming_run_id as priming_run_id, * from staged_indexes;
update priming_runs set status = 'published', finished_at = $finished_at where priming_run_id = $priming_run_id;
