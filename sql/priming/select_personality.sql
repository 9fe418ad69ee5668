-- The pooled (all topics) rows of one run, per personality and setting.
select * from priming_personality where run_name = $run_name
order by n_prologue, n_epilogue, personality
