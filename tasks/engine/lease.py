"""One process asks a run at a time: the run's lease in the warehouse (sql/migrations/V530__run_leases.sql).

A process claiming a run of a declared stage takes its lease in the same write as the claim; while it asks, a thread
renews it every `RENEW_S`; when it ends (finished, failed, stopped by a signal) it drops it. Another process calling
the same run meanwhile is refused with one line naming the holder. A holder that died leaves a lease nobody renews: on
its own host the process is gone (checked at once, so a resume after kill -9 goes on without waiting), on another host
it is taken over once it is `LEASE_S` old.

On a DuckLake warehouse two claims can commit at once: each read no lease (and, for a new run, no run: then each
created its own run of the name, with its own id and lease). So each claimer reads back, after its commit, the leases
of every run of the name, in the order they were committed (DuckLake numbers a row when its transaction commits and
keeps the number on update), and the first live one holds the run: any other claimer backs off, dropping its lease
and the run it created. A claim committed later always sees the earlier one, and the earlier one never yields to a
later one, so exactly one of claims at once asks, whatever the timing (issue 48: two judge processes started in the
same second each created and asked their own run of one name).
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from peras.errors import UsageError
from peras.lake import is_lake
from peras.local_model.watchdog import alive
from peras.periodic import periodically
from peras.sql import run_sql, run_statements
from peras.warehouse import now, open_migrated, retrying, transaction
from tasks.engine.stage import StageDeclaration

LEASE_S = 90.0  # a lease not renewed for this long, held from another host, is taken over
RENEW_S = 15.0  # how often a holder renews its lease while it asks


@dataclass(frozen=True)
class Holder:
    """This process, as a lease names it."""

    host: str
    boot_id: str
    pid: int

    @property
    def name(self) -> str:
        """host/boot_id/pid: unique among live processes, and a reboot makes every old lease of the host stale."""
        return f"{self.host}/{self.boot_id}/{self.pid}"


def this_process() -> Holder:
    """The holder this process is."""
    boot = Path("/proc/sys/kernel/random/boot_id")
    boot_id = boot.read_text().strip() if boot.is_file() else "unknown-boot"
    return Holder(socket.gethostname(), boot_id, os.getpid())


def live_others(leases: list[tuple[Any, ...]], me: Holder, at: datetime) -> list[tuple[Any, ...]]:
    """The leases of other processes that may still be asking the run."""
    return [lease for lease in leases if lease[0] != me.name and is_live(lease, me, at)]


def is_live(lease: tuple[Any, ...], me: Holder, at: datetime) -> bool:
    """A lease (holder, host, pid, taken_at, renewed_at) of a process that may still be asking: on this host (this
    boot), its process exists; on another host, it was renewed less than LEASE_S ago."""
    holder, host, pid, _, renewed_at = lease
    if host == me.host and str(holder).startswith(f"{me.host}/{me.boot_id}/"):
        return alive(int(pid))
    if host == me.host:
        return False  # this host rebooted since
    return at - renewed_at < timedelta(seconds=LEASE_S)


def take_lease(con: Any, kind: str, label: str, run_name: str, run_id: str) -> None:
    """Take the run's lease in the caller's write (the claim), or refuse naming the holder that still asks it."""
    me = this_process()
    at = now()
    key = {"kind": kind, "run_id": run_id}
    leases = run_sql(con, "engine/lease/select_leases", key).fetchall()
    live = live_others(leases, me, at)
    if live:
        raise busy(label, run_name, live[0])
    stale = [lease[0] for lease in leases if lease[0] != me.name]
    values = key | {"holder": me.name, "host": me.host, "pid": me.pid, "now": at, "stale": stale}
    run_sql(con, "engine/lease/take_lease", values)


def check_lease(warehouse: Path, stage: StageDeclaration, run_name: str, run_id: str, created: bool) -> None:
    """After the claim committed, on a warehouse where two claims can commit at once (a lake): back off unless this
    process's lease is the first live one of the runs of that name, dropping the lease and the run it `created`."""
    me = this_process()
    at = now()
    with open_migrated(warehouse) as con:
        leases = run_statements(con, stage.sql("select_name_leases"), {"run_name": run_name}).fetchall()
    first = next((lease for lease in leases if lease[0] == me.name or is_live(lease[:5], me, at)), None)
    if first is not None and first[0] == me.name and first[5] == run_id:
        return
    back_off(warehouse, stage, run_id, created)
    raise busy(stage.label, run_name, first[:5] if first is not None else None)


def back_off(warehouse: Path, stage: StageDeclaration, run_id: str, created: bool) -> None:
    """Give up a claim another claim committed before: this process's lease, and the run if this claim created it (it
    holds nothing yet), in one write."""
    values = {"kind": stage.kind, "run_id": run_id, "holder": this_process().name}

    def drop() -> None:
        with open_migrated(warehouse) as con, transaction(con):
            run_sql(con, "engine/lease/release_lease", values)
            if created:
                run_statements(con, stage.sql("delete_run"), {"run_id": run_id})

    retrying(drop)


def busy(label: str, run_name: str, lease: tuple[Any, ...] | None) -> UsageError:
    """The refusal: who holds the run, since when, and what to do (`lease` None: the holder went meanwhile)."""
    if lease is None:
        return UsageError(f"{label} {run_name!r} was claimed by another process at the same moment: call it again")
    _, host, pid, taken_at, _ = lease
    return UsageError(
        f"{label} {run_name!r} is being asked by another process (pid {pid} on {host}, since "
        f"{taken_at:%Y-%m-%d %H:%M:%S} UTC): wait until it ends, or stop it and call the run again (a process that "
        f"died frees the run at once on its own host, after {LEASE_S:.0f} s on another)"
    )


def release(warehouse: Path, kind: str, run_id: str) -> None:
    """Drop this process's lease of the run."""
    values = {"kind": kind, "run_id": run_id, "holder": this_process().name}

    def drop() -> None:
        with open_migrated(warehouse) as con:
            run_sql(con, "engine/lease/release_lease", values)

    retrying(drop)


@contextlib.contextmanager
def held(warehouse: Path, kind: str, run_id: str) -> Iterator[None]:
    """Drop the run's lease when the block ends, however it ends; on a lake, renew it every RENEW_S meanwhile.

    Renewals tell other hosts the holder is alive; one host's processes are checked by their pid instead, and a
    DuckDB file is one host's (so a file's lease is never renewed: no writer opens it only to say so).
    """
    values = {"kind": kind, "run_id": run_id, "holder": this_process().name}

    def renew() -> None:  # a busy warehouse delays a renewal; the next one comes soon
        with open_migrated(warehouse, wait_s=RENEW_S) as con:
            run_sql(con, "engine/lease/renew_lease", values | {"now": now()})

    renewing = periodically(RENEW_S, renew, f"lease-{run_id}", at_start=False)
    try:
        with renewing if is_lake(warehouse) else contextlib.nullcontext():
            yield
    finally:
        with contextlib.suppress(Exception):  # the run's own outcome matters more than this record
            release(warehouse, kind, run_id)
