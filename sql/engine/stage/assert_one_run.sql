-- A run name stored as more than one run that holds answers: two processes that each created the run at once on a
-- DuckLake warehouse (before its lease read every run of the name back: issue 48) both asked it and both published
-- it, so every measure by run name counted each answer once per copy. The gate refuses it, naming the copies; the
-- runs of the name that are not this one are withheld with it (tasks/engine/runs.py). A copy that holds nothing (a
-- claimer that backed off) doubles nothing.
with named as (
    select r.{{ run_id|ident }} as run_id, r.run_name, r.created_at
    from {{ runs_table|ident }} as r
    where r.run_name = (select run_name from {{ runs_table|ident }} where {{ run_id|ident }} = $run_id)
),

held as (
    select n.run_id, n.run_name, n.created_at, count(a.{{ run_id|ident }}) as n_answers
    from named as n
    left join {{ answers_table|ident }} as a on a.{{ run_id|ident }} = n.run_id
    group by n.run_id, n.run_name, n.created_at
    having count(a.{{ run_id|ident }}) > 0 or n.run_id = $run_id
)

select 'run stored twice' as problem,
    printf('%s is stored as %d runs holding %s (%s), each counted once per copy: delete all copies but one (each '
           '`peras runs delete %s --kind {{ kind|ident }} --yes` deletes one; their LLM answers stay cached), then call '
           'the run again',
           min(run_name), count(*), $items,
           string_agg(printf('run id %s: %d', run_id, n_answers), ', ' order by created_at, run_id), min(run_name))
        as detail
from held
having count(*) > 1
