-- Every built-in function a connection knows, its extensions' included (not macros PERAS defines): peras sql
-- refuses those a loaded extension added.
select distinct function_name from duckdb_functions() where internal
