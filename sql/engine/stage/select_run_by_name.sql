-- One run of a declared stage by name, as `peras runs show` prints it (params as stored: sampling, never keys), with
-- how many items it holds and how many of them failed.
select
    '{{ kind|ident }}' as kind, r.{{ run_id|ident }} as run_id, r.run_name, r.model, r.backend, r.status,
    r.status_reason, r.created_at, r.finished_at, r.params,
    (select count(*) from {{ answers_table|ident }} as a where a.{{ run_id|ident }} = r.{{ run_id|ident }})
        as n_items,
    (select count(*) from {{ answers_table|ident }} as a
     where a.{{ run_id|ident }} = r.{{ run_id|ident }} and a.status <> 'ok') as n_failures
from {{ runs_table|ident }} as r
where r.run_name = $run_name
