-- The topic-level analysis rows of one run, as the CLI, the artifact and the plots show them.
select * from priming_analysis where run_name = $run_name
order by personality, query_id, n_prologue, n_epilogue
