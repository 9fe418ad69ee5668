"""Versioned schema: the sql/migrations/V*.sql files applied in order, on a DuckDB file or a DuckLake catalog
(peras/warehouse.py re-exports every name)."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb

from peras import lake
from peras.paths import SQL_DIR
from peras.sql import run_sql
from peras.warehouse_views import store_views, views_fingerprint
from peras.warehouse_writes import now, retrying, transaction

MIGRATION_NAME = re.compile(r"^V(\d{3})__(\w+)\.sql$")
FILE_ONLY = "-- peras: file-only"  # a migration's first line: it changes nothing a DuckLake warehouse has


def migrations() -> list[tuple[int, str, Path]]:
    """Versioned schema files, in order."""
    found = []
    for path in sorted((SQL_DIR / "migrations").glob("V*.sql")):
        match = MIGRATION_NAME.match(path.name)
        if match:
            found.append((int(match.group(1)), match.group(2), path))
    return found


def migrate(con: duckdb.DuckDBPyConnection) -> list[int]:
    """Apply the migrations this warehouse lacks, then (re)create every view; return versions applied.

    On a DuckLake warehouse the migrations run without their key and check constraints (DuckLake has none), all
    pending ones in one transaction (each commit there is a round of catalog writes in PostgreSQL: a new lake's
    migrations took 15-30 s one commit each, 5-8 s in one, on a loaded 2-core machine). Several hosts may migrate
    at once: when another host's commit beats this one, the migrations go one at a time and those the other host
    committed are skipped. The views are stored in the lake only when their files changed, in one transaction too.
    """
    on_lake = lake.in_lake(con)
    if not on_lake and _is_current(con):  # the usual case, in one read
        return []
    schema = (
        "create table if not exists schema_migrations "
        "(version integer primary key, name varchar not null, applied_at timestamp not null)"
    )
    retrying(lambda: con.execute(lake.strip_constraints(schema) if on_lake else schema))  # hosts may race to it
    have = _applied_versions(con)
    pending = [(version, name, path) for version, name, path in migrations() if version not in have]
    applied = _migrate_at_once(con, pending) if on_lake and pending else []
    for version, name, path in [] if applied else pending:
        if on_lake and version in _applied_versions(con):  # a lake's other hosts migrate too
            continue
        try:
            with transaction(con):
                _apply_migration(con, version, name, path, on_lake)
        except duckdb.Error as exc:
            lost_race = on_lake and (lake.is_conflict(exc) or "already exists" in str(exc))
            if lost_race and version in _applied_versions(con):
                continue  # another host applied it first
            raise
        applied.append(version)
    if on_lake and applied:  # no key: two hosts applying an idempotent migration at once both record it
        retrying(lambda: _dedupe_migrations(con))
    store_views(con, force=bool(applied) and not on_lake)
    return applied


def _is_current(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the warehouse has every migration of this code and the views of its sql/ (migrate would do nothing)."""
    try:
        [(versions, fingerprint)] = run_sql(con, "warehouse/select_schema_state").fetchall()
    except duckdb.CatalogException:  # new, or older than V535's schema_views
        return False
    applied = set(versions or [])
    return fingerprint == views_fingerprint() and all(version in applied for version, _, _ in migrations())


def _migrate_at_once(con: duckdb.DuckDBPyConnection, pending: list[tuple[int, str, Path]]) -> list[int]:
    """On a lake, every pending migration in one transaction: one catalog commit instead of one per migration (and
    a new lake is never left half migrated). The versions applied; none if another host's commit beat this one (the
    caller then goes one migration at a time, skipping what that host applied)."""
    try:
        with transaction(con):
            for version, name, path in pending:
                _apply_migration(con, version, name, path, on_lake=True)
    except duckdb.Error as exc:
        if lake.is_conflict(exc) or "already exists" in str(exc):
            return []
        raise
    return [version for version, _, _ in pending]


def _apply_migration(con: duckdb.DuckDBPyConnection, version: int, name: str, path: Path, on_lake: bool) -> None:
    """One migration and its schema_migrations row, in the caller's transaction."""
    text = path.read_text(encoding="utf-8")
    if not (on_lake and text.startswith(FILE_ONLY)):  # e.g. dropping keys a lake never had
        con.execute(lake.strip_constraints(text) if on_lake else text)
    con.execute(
        "insert into schema_migrations values ($version, $name, $applied_at)",
        {"version": version, "name": name, "applied_at": now()},
    )


def _dedupe_migrations(con: duckdb.DuckDBPyConnection) -> None:
    """One schema_migrations row per version (the first applied)."""
    with transaction(con):
        con.execute(
            "create or replace temp table migration_rows as select * from schema_migrations "
            "qualify row_number() over (partition by version order by applied_at) = 1"
        )
        [(total,)] = con.execute("select count(*) from schema_migrations").fetchall()
        [(kept,)] = con.execute("select count(*) from migration_rows").fetchall()
        if total != kept:
            con.execute("delete from schema_migrations")
            con.execute("insert into schema_migrations select * from migration_rows")


def _applied_versions(con: duckdb.DuckDBPyConnection) -> set[int]:
    return {row[0] for row in con.execute("select version from schema_migrations").fetchall()}


def pending_migrations(con: duckdb.DuckDBPyConnection) -> list[int]:
    """The migration versions this warehouse lacks (read-only: nothing is applied)."""
    try:
        have = {row[0] for row in con.execute("select version from schema_migrations").fetchall()}
    except duckdb.CatalogException:
        have = set()
    return [version for version, _, _ in migrations() if version not in have]
