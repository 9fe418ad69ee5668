-- Every column of every table and view (main schema), in table order: the input of docs/warehouse.md.
select
    c.table_name as relation_name,
    case when t.table_type = 'VIEW' then 'view' else 'table' end as relation_kind,
    c.column_name,
    c.data_type,
    c.ordinal_position
from information_schema.columns as c
inner join information_schema.tables as t
    on t.table_catalog = c.table_catalog and t.table_schema = c.table_schema and t.table_name = c.table_name
where c.table_catalog = current_database() and c.table_schema = current_schema()
order by relation_name, c.ordinal_position
