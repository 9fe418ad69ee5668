-- Who holds a run, by its name: every lease of every run of that name, in the order the leases were committed. Read
-- back after a claim committed on a DuckLake warehouse (tasks/engine/lease.py): two claimers that each found no run
-- of the name create two runs of it, each with its own id and lease, so the leases of one run id are not enough.
-- DuckLake gives a row its row id when the row's transaction commits, in commit order, and keeps it when the row is
-- updated (a renewal): the first live lease by row id is the claim committed first.
select l.holder, l.host, l.pid, l.taken_at, l.renewed_at, l.run_id
from run_leases as l
inner join {{ runs_table|ident }} as r on r.{{ run_id|ident }} = l.run_id
where l.kind = '{{ kind|ident }}' and r.run_name = $run_name
order by l.rowid
