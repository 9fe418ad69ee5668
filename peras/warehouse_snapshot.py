"""The analysts' snapshot: `<stem>.analyst.duckdb`, a copy of the warehouse that no stage opens, replaced after each
stage publishes (peras/warehouse.py re-exports every name)."""

from __future__ import annotations

import errno
import os
import shutil
import time
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from peras.errors import PerasError
from peras.warehouse_writes import first_line, log

if TYPE_CHECKING:
    from peras.settings import Settings

SNAPSHOT_SUFFIX = ".analyst.duckdb"
SNAPSHOT_WAIT_S = 30.0  # an end-of-stage refresh waits this long for the lock, a mid-run one a tenth of it


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
    from peras.warehouse import connect  # peras.warehouse imports this module (lock_message names the snapshot)

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
