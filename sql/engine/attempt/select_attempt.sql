-- The part's current attempt (none before the parent started one).
select attempt from run_attempts where kind = $kind and run_id = $run_id and part = $part
