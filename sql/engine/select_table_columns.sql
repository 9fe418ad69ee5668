-- The columns of the named tables in the warehouse in use (a stage of your own: its tables against its declaration).
select table_name, column_name
from information_schema.columns
where table_catalog = current_database() and table_schema = current_schema() and list_contains($tables, table_name)
