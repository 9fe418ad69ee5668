-- An item stored twice in one run (two processes asking one run at once on a warehouse without keys): the run
-- holds copies, which no measure may count; the gate refuses to publish it.
select 'copies' as problem,
    printf('%d %s stored more than once, e.g. %s', count(*), $items, min(item)) as detail
from (
    select concat_ws(' ', {{ key_names|idents }}) as item
    from {{ answers_table|ident }}
    where {{ run_id|ident }} = $run_id
    group by {{ key_names|idents }}
    having count(*) > 1
)
having count(*) > 0
