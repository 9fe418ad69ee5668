-- Who holds one run: every lease of it (normally one), oldest first.
select holder, host, pid, taken_at, renewed_at
from run_leases
where kind = $kind and run_id = $run_id
order by taken_at, holder
