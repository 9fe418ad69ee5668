-- Record the BFI-2 items the checks are asked with (staged_items, read from the package's validated copy): an item
-- whose text changed is replaced, one stored as it is is left alone (no key needed: see upsert_personalities).
delete from bfi2_items as b
where exists (
    select 1 from staged_items as s
    where s.item_id = b.item_id
      and (s.domain_code, s.domain, s.facet, s.keyed, s.item)
          is distinct from (b.domain_code, b.domain, b.facet, b.keyed, b.item)
);

insert into bfi2_items (item_id, domain_code, domain, facet, keyed, item)
select s.item_id, s.domain_code, s.domain, s.facet, s.keyed, s.item
from staged_items as s
where not exists (select 1 from bfi2_items as b where b.item_id = s.item_id)
