-- The priming index of one run, per personality.
select * from priming_index where run_name = $run_name order by personality
