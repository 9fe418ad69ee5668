-- The holder still asks its run.
update run_leases set renewed_at = $now where kind = $kind and run_id = $run_id and holder = $holder
