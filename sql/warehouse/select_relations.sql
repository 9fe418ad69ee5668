-- Every table and view of the warehouse (main schema), with its kind: what `peras export` accepts.
select
    table_name as relation_name,
    case when table_type = 'VIEW' then 'view' else 'table' end as relation_kind
from information_schema.tables
where table_catalog = current_database() and table_schema = current_schema()
order by relation_name
