-- The second try of a write that ran out of memory under sql/warehouse/set_memory_tight.sql (a shard of unusually
-- long lines, a --chunk-size far above the default, a very large run's gate): still one thread, a larger pool.
set threads = 1;
set memory_limit = '1GB';
set allocator_flush_threshold = '16MB'
