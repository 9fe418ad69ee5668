-- Issue 36 (one run asked by one process at a time): a run of a declared stage (pairwise, priming, personas, fuse)
-- is held by the process asking it. Two processes calling one run name at once used to ask it twice: copies on a
-- DuckLake warehouse, shards loaded and deleted under the other process on a DuckDB file. The holder renews its lease
-- while it asks and drops it when it ends; a lease whose process died (same host: the process is gone; another
-- host: not renewed for lease_s) is taken over. A lease in the warehouse, not a file lock, so it holds on a lake.
create table if not exists run_leases (
    kind        varchar not null,    -- the stage (its declaration's kind)
    run_id      varchar not null,    -- the run held
    holder      varchar not null,    -- host, boot and process of the holder: host/boot_id/pid
    host        varchar not null,    -- the holder's machine (socket.gethostname())
    pid         integer not null,    -- the holder's process id on that machine
    taken_at    timestamp not null,  -- when the holder took the run (UTC)
    renewed_at  timestamp not null   -- when the holder last said it still asks (UTC)
);
