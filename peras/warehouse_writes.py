"""Writing to the warehouse: timestamps, transactions, retries of a DuckLake commit conflict, the memory cap, and
what a failed write says (peras/warehouse.py re-exports every name)."""

from __future__ import annotations

import errno
import logging
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TypeVar

import duckdb

from peras import lake

# What the operating system says when the disk or the file will not take a write (DuckDB passes it on).
STORAGE_FAILURES = {
    "No space left on device": "free some space and run the same command again",
    "Disk quota exceeded": "free some space and run the same command again",
    "Read-only file system": "the file system is mounted read-only: point --warehouse at a writable copy",
    "Permission denied": "the file is not writable for you: fix its permissions or point --warehouse at a copy",
    "Operation not permitted": "the file is not writable (read-only or immutable): point --warehouse at a copy",
}
MEMORY_TIGHT, MEMORY_WIDE = "warehouse/set_memory_tight", "warehouse/set_memory_wide"  # see bounded()

log = logging.getLogger("peras.warehouse")
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
