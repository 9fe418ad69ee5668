-- Issue 35 (fixed cost of a command): the fingerprint of the view and macro files (sql/*/views) the warehouse's
-- views were last created from. Opening a warehouse re-creates its views only when that fingerprint differs or a
-- migration was just applied, not on every open (about a second per command on 2 cores). A DuckLake warehouse has
-- kept this table since views were stored in the lake.
create table if not exists schema_views (
    fingerprint  varchar not null,   -- sha256 over the view files' names and bytes, in name order
    applied_at   timestamp not null  -- when the views were created from them (UTC)
);
