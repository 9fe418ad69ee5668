-- Every judge run name, for messages that name the runs there are.
select run_name from judge_runs order by run_name
