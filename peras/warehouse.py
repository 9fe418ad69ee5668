"""The DuckDB warehouse: short-lived connections, versioned migrations, views from sql/ files.

DuckDB lets one process write at a time and a writer locks the file. Every stage therefore opens the
warehouse only for the moment it reads or publishes, and retries while another process holds it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from peras.errors import UsageError
from peras.paths import SQL_DIR
from peras.sql import view_files

MIGRATION_NAME = re.compile(r"^V(\d{3})__(\w+)\.sql$")
LOCK_HINTS = ("Could not set lock", "Conflicting lock", "database is locked")


def now() -> datetime:
    """Timestamps are stored as naive UTC."""
    return datetime.now(UTC).replace(tzinfo=None)


@contextmanager
def connect(
    path: Path, read_only: bool = False, wait_s: float = 120.0
) -> Iterator[duckdb.DuckDBPyConnection]:
    """Open the warehouse, waiting while another process holds the write lock."""
    if read_only and not path.exists():
        raise UsageError(f"no warehouse at {path}: run `peras ingest sample` (or set PERAS_WAREHOUSE) first")
    path.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + wait_s
    delay = 0.05
    while True:
        try:
            con = duckdb.connect(str(path), read_only=read_only)
            break
        except duckdb.IOException as exc:
            if not any(h in str(exc) for h in LOCK_HINTS) or time.monotonic() > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 1.0)
    try:
        yield con
    finally:
        con.close()


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """Everything written inside commits together or not at all (the one way writers publish)."""
    con.execute("begin transaction")
    try:
        yield con
    except BaseException:
        con.execute("rollback")
        raise
    con.execute("commit")


def migrations() -> list[tuple[int, str, Path]]:
    """Versioned schema files, in order."""
    found = []
    for path in sorted((SQL_DIR / "migrations").glob("V*.sql")):
        match = MIGRATION_NAME.match(path.name)
        if match:
            found.append((int(match.group(1)), match.group(2), path))
    return found


def migrate(con: duckdb.DuckDBPyConnection) -> list[int]:
    """Apply the migrations this warehouse lacks, then (re)create every view; return versions applied."""
    con.execute(
        "create table if not exists schema_migrations "
        "(version integer primary key, name varchar not null, applied_at timestamp not null)"
    )
    have = {row[0] for row in con.execute("select version from schema_migrations").fetchall()}
    applied = []
    for version, name, path in migrations():
        if version in have:
            continue
        with transaction(con):
            con.execute(path.read_text(encoding="utf-8"))
            con.execute(
                "insert into schema_migrations values ($version, $name, $applied_at)",
                {"version": version, "name": name, "applied_at": now()},
            )
        applied.append(version)
    apply_views(con)
    return applied


def apply_views(con: duckdb.DuckDBPyConnection) -> None:
    """Create every view from sql/{staging,marts,metrics}; a view is named after its file.

    Files that start with `create` (macros) run as written. Views may depend on each other in any
    order: failures are retried until no further progress is possible.
    """
    pending = view_files()
    while pending:
        failed: list[tuple[Path, Exception]] = []
        for path in pending:
            text = path.read_text(encoding="utf-8")
            body = _strip_comments(text).lstrip().lower()
            statement = (
                text if body.startswith("create") else f"create or replace view {path.stem} as\n{text}"
            )
            try:
                con.execute(statement)
            except duckdb.CatalogException as exc:
                failed.append((path, exc))
        if len(failed) == len(pending):
            first_path, first_error = failed[0]
            raise RuntimeError(f"cannot create view from {first_path}: {first_error}")
        pending = [path for path, _ in failed]


def _strip_comments(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--"))


@contextmanager
def open_migrated(path: Path, wait_s: float = 120.0) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-write connection to an up-to-date warehouse."""
    with connect(path, read_only=False, wait_s=wait_s) as con:
        migrate(con)
        yield con
