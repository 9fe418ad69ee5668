-- Shard loads run beside the asking: one thread and a bounded buffer pool, so they neither starve the event loop
-- nor let the process grow with the run; freed memory goes back to the system after each statement (DuckDB's
-- allocator otherwise keeps up to 128 MB of it cached).
set threads = 1;
set memory_limit = '128MB';
set allocator_flush_threshold = '16MB'
