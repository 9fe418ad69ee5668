-- Shard loads run beside the asking: one thread and a bounded buffer pool, so they neither starve the event loop
-- nor let the process grow with the run.
set threads = 1;
set memory_limit = '192MB'
