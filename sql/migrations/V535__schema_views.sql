-- peras: file-only
-- Issue 35 (fixed cost of a command): the fingerprint of the view and macro files (sql/*/views) the warehouse's
-- views were last created from. Opening a warehouse re-creates its views only when that fingerprint differs or a
-- migration was just applied, not on every open (about a second per command on 2 cores). A DuckLake warehouse creates
-- it where it always has, outside the migrations (peras/warehouse.py: hosts migrating at once race to it there).
create table if not exists schema_views (
    fingerprint  varchar not null,   -- sha256 over the view files' names and bytes, in name order
    applied_at   timestamp not null  -- when the views were created from them (UTC)
);
