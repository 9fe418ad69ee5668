-- Record the BFI-2 items the checks are asked with (staged_items, read from the package's validated copy).
insert or replace into bfi2_items (item_id, domain_code, domain, facet, keyed, item)
select item_id, domain_code, domain, facet, keyed, item from staged_items
