-- The tables of the warehouse in use (a declared stage's runs are listed only once its tables exist).
select table_name from information_schema.tables where table_catalog = current_database() and table_schema = current_schema()
