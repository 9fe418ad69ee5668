"""The views and macros of sql/<stage>/views: created from their files, recorded by a fingerprint of those files
(peras/warehouse.py re-exports every name)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import duckdb

from peras import lake
from peras.sql import view_files
from peras.warehouse_writes import now, retrying, transaction

CREATE_PERSISTENT = re.compile(r"^(\s*create\s+or\s+replace\s+)(macro|view)\b", re.IGNORECASE | re.MULTILINE)


def views_fingerprint() -> str:
    """sha256 over the view and macro files' names and bytes (sql/*/views), in name order."""
    return hashlib.sha256(
        b"".join(path.name.encode() + b"\0" + path.read_bytes() for path in sorted(view_files()))
    ).hexdigest()


def store_views(con: duckdb.DuckDBPyConnection, force: bool = False) -> None:
    """(Re)create the views when sql/*/views changed since they were created (or, on a file, `force`: a migration
    was just applied and may have replaced a table they read). On a lake in one transaction: one catalog commit
    instead of one per view (a new lake's views: 24-35 s -> 2 s on a loaded 2-core machine)."""
    fingerprint = views_fingerprint()
    if lake.in_lake(con):  # V535 is file-only: a lake's hosts race to this table, so it is made here, retried
        schema = "create table if not exists schema_views (fingerprint varchar not null, applied_at timestamp not null)"
        retrying(lambda: con.execute(schema))
    if stored_views_fingerprint(con) == fingerprint and not force:
        return
    retrying(lambda: _apply_views_together(con) if lake.in_lake(con) else apply_views(con))
    stamp = {"fingerprint": fingerprint, "applied_at": now()}
    try:
        con.execute("insert into schema_views values ($fingerprint, $applied_at)", stamp)
    except duckdb.CatalogException:
        return  # migrated only up to a version before V535 (a test of an older schema): nowhere to record it


def _apply_views_together(con: duckdb.DuckDBPyConnection) -> None:
    """`apply_views` in one transaction: on a lake, one catalog commit instead of one per view."""
    with transaction(con):
        apply_views(con)


def stored_views_fingerprint(con: duckdb.DuckDBPyConnection) -> str | None:
    """The fingerprint the views were last created from; None if never (or before V535 made schema_views)."""
    try:
        stored = con.execute("select fingerprint from schema_views order by applied_at desc limit 1").fetchall()
    except duckdb.CatalogException:
        return None
    return str(stored[0][0]) if stored else None


def apply_views(con: duckdb.DuckDBPyConnection, temporary: bool = False) -> None:
    """Create every view from sql/<stage>/views; a view is named after its file.

    Files that start with `create` (macros) run as written. Views may depend on each other in any
    order: failures are retried until no further progress is possible. `temporary` creates them in the
    connection's temporary schema, where they shadow the stored ones: how a read-only reader gets the
    definitions of the code it runs without writing anything.
    """
    pending = view_files()
    while pending:
        failed: list[tuple[Path, Exception]] = []
        for path in pending:
            text = path.read_text(encoding="utf-8")
            body = _strip_comments(text).lstrip().lower()
            if body.startswith("create"):
                statement = CREATE_PERSISTENT.sub(r"\1temp \2", text) if temporary else text
            else:
                statement = f"create or replace {'temp ' if temporary else ''}view {path.stem} as\n{text}"
            try:
                con.execute(statement)
            except duckdb.CatalogException as exc:
                failed.append((path, exc))
        if len(failed) == len(pending):
            failed = [(path, exc) for path, exc in failed if not _waits_for_tables(con, path)]
            if failed:
                first_path, first_error = failed[0]
                raise RuntimeError(f"cannot create view from {first_path}: {first_error}")
            return
        pending = [path for path, _ in failed]


def _waits_for_tables(con: duckdb.DuckDBPyConnection, path: Path) -> bool:
    """Whether a view that could not be created names, in a `-- needs: table, ...` line, a table this warehouse
    lacks: a warehouse whose migrations stop before that table's (a test of an old warehouse; a newer view file than
    the warehouse's schema) leaves the view out instead of failing, and the open that creates the table creates it."""
    needs = [
        name.strip()
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.startswith("-- needs:")
        for name in line.removeprefix("-- needs:").split(",")
        if name.strip()
    ]
    have = {row[0] for row in con.execute("select table_name from information_schema.tables").fetchall()}
    return any(name not in have for name in needs)


def _strip_comments(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--"))
