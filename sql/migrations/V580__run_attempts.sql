-- Issue 36 item 7 (a superseded attempt must be unable to commit): a part of a fanned-out run is asked by one flow
-- run at a time, its current attempt. When the parent takes a part's host for lost it starts the part again as the
-- next attempt; the old attempt may still be alive (a host so loaded that its beats came late), and its commits are
-- refused from then on: each shard load of a part updates its attempt's row in the load's own transaction and
-- checks it is still the current one (on a DuckLake warehouse the parent's new attempt and that update conflict, so
-- one of the two commits is retried and then sees the other).
create table if not exists run_attempts (
    kind          varchar not null,    -- the stage of the run (judge)
    run_id        varchar not null,    -- the run the part belongs to
    part          varchar not null,    -- the part, e.g. p1-of-4
    attempt       integer not null,    -- the part's current attempt: 1, 2, ... (only its commits are accepted)
    started_at    timestamp not null,  -- when the parent started that attempt (UTC)
    committed_at  timestamp            -- when that attempt last committed a shard (UTC); null before its first
);
