-- A part's attempt commits a shard: mark its row (in the load's transaction; the row is the parent's too, so on a
-- lake a new attempt written meanwhile conflicts with this commit).
update run_attempts set committed_at = $now
where kind = $kind and run_id = $run_id and part = $part and attempt = $attempt
