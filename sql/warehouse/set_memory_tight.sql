-- A write that runs beside the asking (a shard load, the judge gate): one thread and a small buffer pool, so it
-- neither starves the event loop nor lets the process grow with the run or the warehouse; memory it frees goes
-- back to the system after each statement (DuckDB's allocator otherwise keeps up to 128 MB of it). A write that
-- runs out of memory under this cap is rolled back and run once more under sql/warehouse/set_memory_wide.sql
-- (peras.warehouse.bounded).
set threads = 1;
set memory_limit = '96MB';
set allocator_flush_threshold = '16MB'
