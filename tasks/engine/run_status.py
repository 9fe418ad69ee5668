"""A run's state as the terminal and the warehouse see it: its status (`recorded_run`, `set_run_status`), what is
left to ask (`count_pending`) and the notices a user should see on the terminal while it waits (`notice`).

Both ways of asking use these: online (`ask_all`, tasks/engine/tasks.py) and batch rounds (tasks/engine/batch_tasks.py).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

from prefect import get_run_logger

from peras.errors import CheckFailed
from peras.settings import Settings
from peras.sql import run_statements
from peras.warehouse import now, open_migrated, retrying
from tasks.engine.spec import Plan, RunIdentity
from tasks.engine.stage import sql_of
from tasks.engine.store import WarehouseThread


def count_pending(settings: Settings, plan: Plan, thread: WarehouseThread | None = None) -> int:
    """How many planned items have no stored outcome yet (the progress total). With `thread`: counted on it (its
    read-only connection then stays open for whoever uses the thread next, until idle), else on one of its own."""
    if thread is not None:
        return plan.count(thread.fetch)
    own = WarehouseThread(settings.warehouse)
    try:
        return plan.count(own.fetch)
    finally:
        own.close()


def notice(message: str) -> None:
    """A long wait the user should know about: in the flow log and on the terminal."""
    with contextlib.suppress(Exception):
        get_run_logger().warning(message)
    # Not print(): flows run with log_prints, which turns print() into a log record the terminal never shows.
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


@contextlib.contextmanager
def recorded_run(settings: Settings, identity: RunIdentity) -> Iterator[None]:
    """Mark the run 'running' for the block; if the block fails, 'failed' with the reason, then re-raise."""
    set_run_status(settings.warehouse, identity, "running", None)
    try:
        yield
    except BaseException as exc:
        reason = (f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)[:500]
        with contextlib.suppress(Exception):  # the original error matters more than this record
            status = "failed_check" if isinstance(exc, CheckFailed) else "failed"
            set_run_status(settings.warehouse, identity, status, reason)
        raise


def set_run_status(warehouse: Path, identity: RunIdentity, status: str, reason: str | None) -> None:
    """Record a run's state (its declaration's `set_run_status`)."""
    params = {"run_id": identity.run_id, "status": status, "status_reason": reason, "finished_at": now()}

    def record() -> None:
        with open_migrated(warehouse) as con:
            run_statements(con, sql_of(identity.kind, "set_run_status"), params)

    retrying(record)  # on a DuckLake warehouse another run's status update may conflict with this one
