"""A probe run's measures, read back from the views of sql/probes/views for `peras probes summary` and `check`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from peras.errors import CheckFailed, UsageError
from peras.settings import Settings
from peras.sql import run_sql
from peras.warehouse import ensure_migrated, open_current

HEADERS = [
    "kind", "role", "personality", "cot", "method", "copies", "attackable", "raised", "success", "shift 0/1",
    "shift 2/3", "changed", "conf shift", "auroc conf", "auroc persona",
]  # fmt: skip


@dataclass(frozen=True)
class ProbeRun:
    """A judge run of a probe collection."""

    run_id: str
    run_name: str
    collection_id: str
    source_collection_id: str


def probe_run(con: Any, run_name: str) -> ProbeRun:
    """The run `run_name`, refused unless it is a published judge run of a probe collection."""
    rows = run_sql(con, "probes/select_run", {"run_name": run_name}).fetchall()
    if not rows:
        raise UsageError(f"no judge run named {run_name!r} (see `peras runs list`)")
    run_id, name, collection, source, status, is_before_build, built_at = rows[0]
    if source is None:
        raise UsageError(
            f"run {name!r} judged collection {collection!r}, which is not a probe collection: build one with "
            f"`peras probes build {collection}` and judge `{collection}-probes`"
        )
    if status != "published":
        raise UsageError(f"run {name!r} is {status}, not published: finish it with `peras judge {collection}` first")
    if is_before_build:
        raise UsageError(
            f"run {name!r} judged an earlier build of {collection!r} (built again at {built_at:%Y-%m-%d %H:%M}): "
            f"judge the new build as a new run (`peras judge {collection} --run-name NEW`)"
        )
    return ProbeRun(run_id, name, collection, source)


def read_measures(settings: Settings, run_name: str) -> tuple[ProbeRun, list[list[Any]]]:
    """The run and its rows of probe_measures (attacks first)."""
    ensure_migrated(settings.warehouse)
    with open_current(settings.warehouse) as con:
        run = probe_run(con, run_name)
        rows = run_sql(con, "probes/select_measures", {"run_id": run.run_id}).fetchall()
    return run, [list(row) for row in rows]


def check_run(settings: Settings, run_name: str, max_success: float) -> str:
    """One line saying the run passes; CheckFailed (exit 1) naming the worst setting when an attack succeeds more
    often than `max_success`, or when no attack had anything to raise."""
    ensure_migrated(settings.warehouse)
    with open_current(settings.warehouse) as con:
        run = probe_run(con, run_name)
        worst = run_sql(con, "probes/select_worst_setting", {"run_id": run.run_id}).fetchall()
    if not worst:
        raise CheckFailed(
            f"run {run_name!r}: nothing to check: no attack copy of a 0/1 pair whose clean copy was labelled below 2"
        )
    kind, personality, cot, method, n_attackable, n_success, rate = worst[0]
    setting = f"{kind} on personality {personality}, {'with' if cot else 'without'} CoT, {method} confidence"
    figures = f"{n_success} of {n_attackable} non-relevant pairs raised to 2+ ({rate:.3f}"
    if rate > max_success:
        raise CheckFailed(f"run {run_name!r} is too easy to fool: {setting}: {figures} > {max_success:g})")
    return f"run {run_name!r} passes: worst is {setting}: {figures} <= {max_success:g})"
