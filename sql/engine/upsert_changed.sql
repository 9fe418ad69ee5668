-- Store the rows of `staged` in `target` by their `key`: a row whose `columns` changed is replaced, one already
-- stored as it is is left alone (no write: runs on several hosts at once store the same rows without conflicting;
-- written without a key, which a DuckLake warehouse has none of). Used for the personality conditions with their
-- exact instruction text (personalities) and the BFI-2 items the checks are asked with (bfi2_items).
delete from {{ target|ident }} as t
where exists (
    select 1 from {{ staged|ident }} as s
    where s.{{ key|ident }} = t.{{ key|ident }}
      and ({{ columns|idents(prefix="s.") }}) is distinct from ({{ columns|idents(prefix="t.") }})
);

insert into {{ target|ident }} ({{ key|ident }}, {{ columns|idents }})
select s.{{ key|ident }}, {{ columns|idents(prefix="s.") }}
from {{ staged|ident }} as s
where not exists (select 1 from {{ target|ident }} as t where t.{{ key|ident }} = s.{{ key|ident }})
