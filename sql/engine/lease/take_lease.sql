-- Take one run: leases of holders found gone ($stale) are dropped, then this holder's lease is (re)written.
delete from run_leases where kind = $kind and run_id = $run_id and list_contains($stale, holder);

delete from run_leases where kind = $kind and run_id = $run_id and holder = $holder;

insert into run_leases (kind, run_id, holder, host, pid, taken_at, renewed_at)
values ($kind, $run_id, $holder, $host, $pid, $now, $now)
