"""The DuckDB warehouse: short-lived connections, versioned migrations, views from sql/ files, analysts' snapshot.

DuckDB lets one process write at a time, and any open connection, read-only included, holds a lock on the file
that a writer cannot get past. Every stage therefore opens the warehouse only for the moment it reads or
publishes, and retries while another process holds it. Analysts read a copy instead: after each stage publishes,
`publish_snapshot` replaces `<stem>.analyst.duckdb` next to the warehouse, which no stage ever opens.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import re
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import duckdb

from peras import file_instances, lake
from peras.errors import PerasError, UsageError
from peras.paths import SQL_DIR
from peras.sql import query_frame, run_sql, view_files

if TYPE_CHECKING:
    import polars as pl

    from peras.settings import Settings

MIGRATION_NAME = re.compile(r"^V(\d{3})__(\w+)\.sql$")
LOCK_HINTS = ("Could not set lock", "Conflicting lock", "database is locked")
LOCK_HOLDER = re.compile(r"Conflicting lock is held in (?P<program>.+?) \(PID (?P<pid>\d+)\)")
LOCK_WAIT_S = 120.0  # how long a stage waits for another process's lock before it gives up
SNAPSHOT_SUFFIX = ".analyst.duckdb"
SNAPSHOT_WAIT_S = 30.0  # an end-of-stage refresh waits this long for the lock, a mid-run one a tenth of it
# What the operating system says when the disk or the file will not take a write (DuckDB passes it on).
STORAGE_FAILURES = {
    "No space left on device": "free some space and run the same command again",
    "Disk quota exceeded": "free some space and run the same command again",
    "Read-only file system": "the file system is mounted read-only: point --warehouse at a writable copy",
    "Permission denied": "the file is not writable for you: fix its permissions or point --warehouse at a copy",
    "Operation not permitted": "the file is not writable (read-only or immutable): point --warehouse at a copy",
}
# Rows per row group of the warehouse file (DuckDB's default is 122,880): see _attach_file.
ROW_GROUP_ROWS = 16_384
FILE_ALIAS = "peras"  # the attached file's catalog name (`lake` is the DuckLake warehouse's)
MEMORY_TIGHT, MEMORY_WIDE = "warehouse/set_memory_tight", "warehouse/set_memory_wide"  # see bounded()
FILE_ONLY = "-- peras: file-only"  # a migration's first line: it changes nothing a DuckLake warehouse has
CREATE_PERSISTENT = re.compile(r"^(\s*create\s+or\s+replace\s+)(macro|view)\b", re.IGNORECASE | re.MULTILINE)

log = logging.getLogger(__name__)
T = TypeVar("T")


def now() -> datetime:
    """Timestamps are stored as naive UTC."""
    return datetime.now(UTC).replace(tzinfo=None)


_SECOND: tuple[int, str] = (-1, "")  # the microsecond the last whole second `now_text` formatted began, and its text


def now_text() -> str:
    """`now().isoformat(timespec="microseconds")` (naive UTC, 'YYYY-MM-DDTHH:MM:SS.ffffff') at a fraction of its cost:
    the journal stamps two lines per request with it (tasks/engine/engine.py), so the seconds' text is kept (one
    object: threads), and the microseconds are written by `str`, not a format spec (0.32 against 0.45 us)."""
    global _SECOND
    micros = time.time_ns() // 1000
    kept = _SECOND
    fraction = micros - kept[0]
    if not 0 <= fraction < 1_000_000:
        began = micros - micros % 1_000_000
        kept = _SECOND = (began, datetime.fromtimestamp(began // 1_000_000, UTC).strftime("%Y-%m-%dT%H:%M:%S."))
        fraction = micros - began
    return kept[1] + str(1_000_000 + fraction)[1:]


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


def storage_failure(exc: BaseException) -> str | None:
    """A full disk, a read-only file system, a file without write permission, as one line; None if not that.

    Raised by DuckDB or Python anywhere in a stage (the stage's transaction has then published nothing).
    """
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM):
        failure = os.strerror(exc.errno)
        where = f" {exc.filename}" if exc.filename else ""
        return f"cannot write{where} ({failure.lower()}): {STORAGE_FAILURES.get(failure, 'fix it and run again')}"
    if isinstance(exc, duckdb.Error):
        text = first_line(exc)
        for failure, advice in STORAGE_FAILURES.items():
            if failure in text:
                return f"{text}: {advice}"
    return None


def first_line(exc: BaseException) -> str:
    """An exception's message, first line only."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


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


def retrying(write: Callable[[], T], attempts: int = 20) -> T:
    """Run `write` (which opens its own connection and transaction) again while another writer's commit beats it.

    Only a DuckLake warehouse has such conflicts (two transactions deleting from one data file); a DuckDB file has
    one writer at a time. The whole write is repeated, so it must be idempotent (every loader is).
    """
    delay = 0.05
    for attempt in range(attempts):
        try:
            return write()
        except duckdb.Error as exc:
            if not lake.is_conflict(exc) or attempt == attempts - 1:
                raise
            log.info("warehouse commit conflicted with another writer's; retrying (%d)", attempt + 1)
            time.sleep(delay)
            delay = min(delay * 2, 2.0)
    raise AssertionError("unreachable")


def retrying_bounded(write: Callable[[str], T]) -> T:
    """`bounded(write)`, run again whole while a DuckLake commit conflicts (`retrying`): how shard loads and gates
    write."""
    return retrying(lambda: bounded(write))


def bounded(write: Callable[[str], T]) -> T:
    """Run `write(limits)` -- which opens its own connection, runs sql/<limits>.sql first and writes in one
    transaction -- under a small memory cap; if DuckDB runs out of memory there, once more under a larger one.

    The cap keeps a long run's memory flat (bench/bench_engine.py); the second try keeps a rare large write
    (very long lines, a much larger --chunk-size) from failing the run for it. The first try wrote nothing.
    """
    try:
        return write(MEMORY_TIGHT)
    except duckdb.OutOfMemoryException as exc:
        log.warning("a warehouse write ran out of memory under its cap (%s); trying once more with more", exc)
        return write(MEMORY_WIDE)


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
    _store_views(con, force=bool(applied) and not on_lake)
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


def views_fingerprint() -> str:
    """sha256 over the view and macro files' names and bytes (sql/*/views), in name order."""
    return hashlib.sha256(
        b"".join(path.name.encode() + b"\0" + path.read_bytes() for path in sorted(view_files()))
    ).hexdigest()


def _store_views(con: duckdb.DuckDBPyConnection, force: bool = False) -> None:
    """(Re)create the views when sql/*/views changed since they were created (or, on a file, `force`: a migration
    was just applied and may have replaced a table they read). On a lake in one transaction: one catalog commit
    instead of one per view (a new lake's views: 24-35 s -> 2 s on a loaded 2-core machine)."""
    fingerprint = views_fingerprint()
    if lake.in_lake(con):  # V535 is file-only: a lake's hosts race to this table, so it is made here, retried
        schema = "create table if not exists schema_views (fingerprint varchar not null, applied_at timestamp not null)"
        retrying(lambda: con.execute(schema))
    if _stored_views_fingerprint(con) == fingerprint and not force:
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


def _stored_views_fingerprint(con: duckdb.DuckDBPyConnection) -> str | None:
    """The fingerprint the views were last created from; None if never (or before V535 made schema_views)."""
    try:
        stored = con.execute("select fingerprint from schema_views order by applied_at desc limit 1").fetchall()
    except duckdb.CatalogException:
        return None
    return str(stored[0][0]) if stored else None


def pending_migrations(con: duckdb.DuckDBPyConnection) -> list[int]:
    """The migration versions this warehouse lacks (read-only: nothing is applied)."""
    try:
        have = {row[0] for row in con.execute("select version from schema_migrations").fetchall()}
    except duckdb.CatalogException:
        have = set()
    return [version for version, _, _ in migrations() if version not in have]


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


def _strip_comments(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--"))


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
        if not pending_migrations(con) and _stored_views_fingerprint(con) != views_fingerprint():
            apply_views(con, temporary=True)
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


def snapshot_path(warehouse: Path) -> Path:
    """The analysts' copy of `warehouse`: `<stem>.analyst.duckdb` in the same directory."""
    return warehouse.with_name(warehouse.stem + SNAPSHOT_SUFFIX)


def wal_path(warehouse: Path) -> Path:
    """DuckDB's write-ahead log of `warehouse` (changes committed but not yet checkpointed into the file)."""
    return warehouse.with_name(warehouse.name + ".wal")


def snapshot_is_current(warehouse: Path) -> bool:
    """Whether the snapshot holds the warehouse's latest state.

    A snapshot carries its warehouse's size and modification time (shutil.copy2); any later commit changes the
    warehouse file or leaves a write-ahead log.
    """
    try:
        source, copy = warehouse.stat(), snapshot_path(warehouse).stat()
    except OSError:
        return False
    return _wal_bytes(warehouse) == 0 and (source.st_size, source.st_mtime_ns) == (copy.st_size, copy.st_mtime_ns)


def _wal_bytes(warehouse: Path) -> int:
    try:
        return wal_path(warehouse).stat().st_size
    except FileNotFoundError:
        return 0


def analyst_source(warehouse: Path) -> Path:
    """What `peras sql` and `peras export` read: the snapshot when it is current, else the warehouse itself."""
    return snapshot_path(warehouse) if snapshot_is_current(warehouse) else warehouse


def publish_snapshot(
    settings: Settings, throttled: bool = False, warn: Callable[[str], None] | None = None
) -> Path | None:
    """Replace the analysts' snapshot with a copy of the warehouse as it is now; return it (None: not refreshed).

    Writers call it after they publish. `throttled` (mid-run refreshes) skips it when the snapshot is younger
    than settings.analyst_snapshot_interval_s. It never fails the stage: a warehouse still locked, a full
    disk, a failed copy leave the previous snapshot in place and are reported to `warn` (default: this module's
    logger). Readers who have the old snapshot open keep reading it (os.replace swaps the name, not their open
    file) until they reconnect.
    """
    warehouse, target = settings.warehouse, snapshot_path(settings.warehouse)
    if not settings.analyst_snapshot or not warehouse.exists():
        return None
    if throttled and target.exists() and time.time() - target.stat().st_ctime < settings.analyst_snapshot_interval_s:
        return None
    if snapshot_is_current(warehouse):
        return target
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        wait_s = SNAPSHOT_WAIT_S / 10 if throttled else SNAPSHOT_WAIT_S
        with connect(warehouse, wait_s=wait_s) as con:
            con.execute("checkpoint")  # everything committed is now in the file itself, none in the .wal
            if not snapshot_is_current(warehouse):
                _copy_checked(warehouse, temporary)
                os.replace(temporary, target)
        return target
    except (PerasError, duckdb.Error, OSError) as exc:
        (warn or log.warning)(f"analysts' snapshot {target} not refreshed (the previous one stays): {first_line(exc)}")
        return None
    finally:
        with suppress(OSError):
            temporary.unlink(missing_ok=True)


def _copy_checked(warehouse: Path, copy: Path) -> None:
    """Copy the checkpointed warehouse, durably, and make sure nothing wrote to it meanwhile."""
    before = warehouse.stat()
    shutil.copy2(warehouse, copy)  # copy2 keeps the modification time: snapshot_is_current compares it
    with copy.open("rb") as handle:
        os.fsync(handle.fileno())
    after = warehouse.stat()
    # This process may hold other connections to the same database (Prefect runs tasks in threads).
    if (before.st_size, before.st_mtime_ns) != (after.st_size, after.st_mtime_ns) or _wal_bytes(warehouse):
        raise OSError(errno.EAGAIN, "the warehouse changed while it was copied")
