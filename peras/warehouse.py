"""The DuckDB warehouse: short-lived connections, versioned migrations, views from sql/ files, analysts' snapshot.

DuckDB lets one process write at a time, and any open connection, read-only included, holds a lock on the file
that a writer cannot get past. Every stage therefore opens the warehouse only for the moment it reads or
publishes, and retries while another process holds it. Analysts read a copy instead: after each stage publishes,
`publish_snapshot` replaces `<stem>.analyst.duckdb` next to the warehouse, which no stage ever opens.

This module opens the warehouse; the rest lives beside it and is re-exported here, so `peras.warehouse` stays the one
name callers import: writing (`peras/warehouse_writes.py`), migrations (`peras/warehouse_migrations.py`), views
(`peras/warehouse_views.py`), the analysts' snapshot (`peras/warehouse_snapshot.py`).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from peras import file_instances, lake, warehouse_views
from peras.errors import UsageError
from peras.sql import query_frame, run_sql
from peras.warehouse_migrations import FILE_ONLY, MIGRATION_NAME, migrate, migrations, pending_migrations
from peras.warehouse_snapshot import (
    SNAPSHOT_SUFFIX,
    SNAPSHOT_WAIT_S,
    analyst_source,
    publish_snapshot,
    snapshot_is_current,
    snapshot_path,
    wal_path,
)
from peras.warehouse_views import apply_views, views_fingerprint
from peras.warehouse_writes import (
    MEMORY_TIGHT,
    MEMORY_WIDE,
    STORAGE_FAILURES,
    bounded,
    first_line,
    log,
    now,
    now_text,
    retrying,
    retrying_bounded,
    storage_failure,
    transaction,
)

if TYPE_CHECKING:
    import polars as pl

__all__ = [
    "FILE_ONLY",
    "MEMORY_TIGHT",
    "MEMORY_WIDE",
    "MIGRATION_NAME",
    "SNAPSHOT_SUFFIX",
    "SNAPSHOT_WAIT_S",
    "STORAGE_FAILURES",
    "analyst_source",
    "apply_views",
    "attach_statement",
    "bounded",
    "connect",
    "ensure_migrated",
    "exists",
    "first_line",
    "kept_open",
    "lock_down",
    "lock_message",
    "log",
    "migrate",
    "migrations",
    "not_ingested",
    "now",
    "now_text",
    "open_current",
    "open_failure",
    "open_migrated",
    "pending_migrations",
    "publish_snapshot",
    "read_frame",
    "require_collection",
    "retrying",
    "retrying_bounded",
    "snapshot_is_current",
    "snapshot_path",
    "storage_failure",
    "transaction",
    "views_fingerprint",
    "wal_path",
]

LOCK_HINTS = ("Could not set lock", "Conflicting lock", "database is locked")
LOCK_HOLDER = re.compile(r"Conflicting lock is held in (?P<program>.+?) \(PID (?P<pid>\d+)\)")
LOCK_WAIT_S = 120.0  # how long a stage waits for another process's lock before it gives up
# Rows per row group of the warehouse file (DuckDB's default is 122,880): see _attach_file.
ROW_GROUP_ROWS = 16_384
FILE_ALIAS = "peras"  # the attached file's catalog name (`lake` is the DuckLake warehouse's)


@contextmanager
def connect(path: Path, read_only: bool = False, wait_s: float | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
    """Open the warehouse, waiting up to `wait_s` (default LOCK_WAIT_S) while another process holds its lock.

    A file that cannot be opened (still locked, not a DuckDB file, not writable) is one UsageError line. A DuckLake
    warehouse (`ducklake:...`, peras/lake.py) has no lock to wait for: writers commit concurrently.
    """
    if lake.is_lake(path):
        con = _open_lake(str(path), read_only)
        try:
            yield con
        finally:
            con.close()
        return
    if read_only and _is_kept(path):
        read_only = False  # the file is open for writing in this process (kept_open): DuckDB allows one instance
    if read_only and not exists(path):
        raise UsageError(f"no warehouse at {path}: run `peras ingest sample` (or set PERAS_WAREHOUSE) first")
    if not read_only:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"cannot create the warehouse's directory {path.parent}: {exc.strerror}") from None
    con = _open(path, read_only, LOCK_WAIT_S if wait_s is None else wait_s)
    try:
        yield con
    finally:
        try:
            con.close()
        finally:
            file_instances.release(path, read_only)  # the last connection's: the file detached, its lock let go


def _open_lake(target: str, read_only: bool) -> duckdb.DuckDBPyConnection:
    """Attach the lake; a new catalog is created in the settings' data path (lake_data_path, PERAS_LAKE_DATA_PATH).

    Two hosts creating the same new catalog at once: the one PostgreSQL refuses attaches again (and finds it).
    """
    attempts = 5
    for attempt in range(attempts):
        try:
            return _attach_lake(target, read_only)
        except (duckdb.Error, FileNotFoundError, OSError) as exc:
            raced = any(hint in str(exc) for hint in lake.CREATION_RACE_HINTS)
            if raced and attempt < attempts - 1:
                time.sleep(0.2 * (attempt + 1))
                continue
            raise UsageError(lake.open_failure(target, exc)) from None
    raise AssertionError("unreachable")


def _attach_lake(target: str, read_only: bool) -> duckdb.DuckDBPyConnection:
    try:
        return lake.open_lake(target, None, read_only)
    except duckdb.Error as exc:
        if "data_path is not set" not in str(exc) or read_only:
            raise
    data_path = lake.DATA_PATHS.get(target)
    if data_path is None:
        from peras.settings import load_settings

        data_path = load_settings().lake_data_path
    if data_path is None:
        raise duckdb.InvalidInputException("data_path is not set")
    data_path.mkdir(parents=True, exist_ok=True)
    return lake.open_lake(target, data_path.resolve(), read_only)


def _open(path: Path, read_only: bool, wait_s: float) -> duckdb.DuckDBPyConnection:
    started = time.monotonic()
    delay = 0.05
    while True:
        try:
            return _attach_file(path, read_only)
        except duckdb.Error as exc:
            locked = any(hint in str(exc) for hint in LOCK_HINTS)
            if locked and time.monotonic() - started < wait_s:
                time.sleep(delay)
                delay = min(delay * 2, 1.0)
                continue
            message = lock_message(path, exc, wait_s) if locked else open_failure(path, exc, read_only)
            raise UsageError(message) from None


def _attach_file(path: Path, read_only: bool) -> duckdb.DuckDBPyConnection:
    """A connection to the warehouse file, attached with row groups of ROW_GROUP_ROWS rows.

    DuckDB rewrites a table's last row group whole at every checkpoint; at its default size (122,880 rows) a
    growing llm_requests made each shard load's checkpoint cost memory in proportion to the run (peak RSS of a
    50,930-judgment run 695 MB, 531 MB with this alone; docs/scaling.md, "Memory of a run"). The option holds
    per attach, not per file, so every connection PERAS opens attaches this way. Connections of one process to one
    file (and mode) share one DuckDB instance, kept by the process (peras/file_instances.py): DuckDB refuses a
    second instance on a file. temp_directory: where a file database spills.
    """
    config: file_instances.Config = {"temp_directory": f"{path}.tmp"}
    return file_instances.acquire(path, read_only, config, attach_statement(path, read_only), FILE_ALIAS)


def attach_statement(path: Path, read_only: bool) -> str:
    """ATTACH of the warehouse file (a path cannot be a bound parameter of ATTACH, so it is quoted here)."""
    options = f"row_group_size {ROW_GROUP_ROWS}" + (", read_only" if read_only else "")
    return f"attach if not exists {lake.quoted(str(path))} as {FILE_ALIAS} ({options})"


def exists(path: Path) -> bool:
    """Whether there is a warehouse to read (a DuckLake catalog is taken to exist: connecting says if not)."""
    return lake.is_lake(path) or path.exists()


def lock_message(path: Path, exc: BaseException, waited_s: float) -> str:
    """Who holds the lock (as DuckDB names it) and what to do about it, in one line."""
    holder = LOCK_HOLDER.search(str(exc))
    who = f"{holder['program']} (PID {holder['pid']})" if holder else "another process"
    return (
        f"the warehouse {path} is locked by {who}, still after {waited_s:.0f} s: if that is a notebook or a duckdb "
        f"shell, close its connection (even a read-only one blocks every stage) and read the analysts' snapshot "
        f"{snapshot_path(path)} instead (docs/warehouse.md); if it is another peras stage, run this when it ends"
    )


def open_failure(path: Path, exc: BaseException, read_only: bool) -> str:
    """Why `path` cannot be opened, in one line that says what to do."""
    text = first_line(exc)
    if "not a valid DuckDB database file" in text:
        return f"{path} is not a DuckDB database: point --warehouse (or PERAS_WAREHOUSE) at the warehouse file"
    for failure, advice in STORAGE_FAILURES.items():
        if failure in text:
            doing = "read" if read_only else "write"
            return f"cannot {doing} the warehouse {path} ({failure.lower()}): {advice}"
    return f"cannot open the warehouse {path}: {text}"


def require_collection(con: duckdb.DuckDBPyConnection, collection_id: str, subset_name: str | None = None) -> None:
    """Refuse, with what to run, a collection the warehouse lacks or a subset it does not have."""
    params = {"collection_id": collection_id, "subset_name": subset_name}
    [(has_collection, has_subset)] = run_sql(con, "warehouse/select_subset_exists", params).fetchall()
    if not has_collection:
        raise not_ingested(collection_id)
    if not has_subset:
        raise UsageError(
            f"collection {collection_id!r} has no subset {subset_name!r} (see `peras subsets {collection_id}`)"
        )


def not_ingested(collection_id: str) -> UsageError:
    """The error for a collection the warehouse lacks, naming the command that adds it."""
    return UsageError(f"collection {collection_id!r} is not in the warehouse: run `peras ingest {collection_id}`")


@contextmanager
def open_migrated(path: Path, wait_s: float | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-write connection to an up-to-date warehouse (inside `kept_open`, migrated when it was opened)."""
    with connect(path, read_only=False, wait_s=wait_s) as con:
        if not _is_kept(path):
            migrate(con)
        yield con


def read_frame(path: Path, name: str, params: dict[str, object] | None = None) -> pl.DataFrame:
    """What sql/<name>.sql reads from the warehouse at `path`, as a Polars DataFrame (opened up to date)."""
    with open_migrated(path) as con:
        frame: pl.DataFrame = query_frame(con, name, params)
        return frame


_KEPT: dict[Path, int] = {}  # warehouse files this process keeps open (kept_open), how many times over
_KEPT_LOCK = threading.Lock()


@contextmanager
def kept_open(path: Path, wait_s: float | None = None) -> Iterator[None]:
    """Keep the warehouse file open for writing, migrated, for a block of steps that run back to back (no asking,
    no waiting in between): every connection the block opens, read-only ones included, shares this process's one
    DuckDB instance on the file instead of attaching it (and reading its catalog) again, and `open_migrated` skips
    the migration check, since no other process can change the file while this one holds its lock.

    The lock is held for the whole block, so a block never spans an asking or anything slow (STYLE: a stage opens
    the warehouse only for the moment it reads or publishes). A DuckLake warehouse has no lock, and other hosts
    migrate at any time: nothing is kept there and the block's steps connect as they would without it.
    """
    if lake.is_lake(path):
        yield
        return
    key = path.resolve()
    with open_migrated(path, wait_s):  # the first connection: it holds the instance (and the lock) for the block
        with _KEPT_LOCK:
            _KEPT[key] = _KEPT.get(key, 0) + 1
        try:
            yield
        finally:
            with _KEPT_LOCK:
                _KEPT[key] -= 1
                if not _KEPT[key]:
                    del _KEPT[key]


def _is_kept(path: Path) -> bool:
    """Whether this process keeps the file `path` open (`kept_open`)."""
    if not _KEPT or lake.is_lake(path):
        return False
    with _KEPT_LOCK:
        return path.resolve() in _KEPT


def ensure_migrated(path: Path, wait_s: float | None = None) -> None:
    """Apply missing migrations, opening the warehouse for writing only when one is missing.

    What a stage that only reads calls first: it then works on a read-only file and never rewrites the views.
    """
    if exists(path) and not lake.is_lake(path):  # a lake has no lock to spare: migrate() there is cheap when current
        with connect(path, read_only=True, wait_s=wait_s) as con:
            if not pending_migrations(con):
                return
    with open_migrated(path, wait_s):
        pass


@contextmanager
def open_current(path: Path, wait_s: float | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-only connection on which every view and macro is the one in sql/ now (as temporary objects).

    For stages that only read (metrics, report): the stored views are those of the last writer's code.
    """
    with connect(path, read_only=True, wait_s=wait_s) as con:
        views = warehouse_views  # looked up when called: tests replace its functions
        if not pending_migrations(con) and views.stored_views_fingerprint(con) != views.views_fingerprint():
            views.apply_views(con, temporary=True)
        yield con


def lock_down(con: duckdb.DuckDBPyConnection) -> None:
    """No file but the open database can be read or written on `con`, and that cannot be switched back.

    For analysts' ad-hoc SQL: no COPY TO, no ATTACH, no read_csv('/etc/passwd'), no glob, no extensions. On a
    DuckLake warehouse the lake's data directory stays readable (its tables are Parquet files there).
    """
    if lake.in_lake(con):
        [(data_path,)] = run_sql(con, "warehouse/select_lake_data_path").fetchall()
        con.execute(f"set allowed_directories = [{lake.quoted(str(data_path))}]")
    con.execute("set enable_external_access = false")
    con.execute("set lock_configuration = true")
