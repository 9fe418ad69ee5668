-- The holder is done with its run (finished, failed or stopped): another process may take it.
delete from run_leases where kind = $kind and run_id = $run_id and holder = $holder
