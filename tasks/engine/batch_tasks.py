"""Batch mode's Prefect task: collect what ended, run a pass from it, submit the next round; with `wait`, repeat.

`ask_all` (tasks/engine/tasks.py) hands a run to `ask_in_rounds` when `settings.mode` is 'batch' and the stage's
declaration allows batches (every stage but the persona-set builds). It returns
the engine's counts plus `n_waiting` (items whose answers are still out) and the batches it submitted; a flow whose
run still waits ends there (the run's status is 'waiting', with what is out) and gates only when nothing waits.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

from peras.errors import BudgetReached
from peras.settings import Settings
from peras.sql import run_sql
from peras.warehouse import now, open_migrated, retrying, transaction
from tasks.engine.batch import BatchRound, load_round
from tasks.engine.batch_store import (
    batch_api,
    collect,
    live_batches,
    run_batches,
    submit,
    wait_line,
    within_budget,
)
from tasks.engine.endpoint import Endpoint, public_url
from tasks.engine.engine import Engine
from tasks.engine.run_status import count_pending, notice, set_run_status
from tasks.engine.spec import EngineStats, Plan, RunIdentity

Lines = tuple[str, int, dict[str, Any]]  # a round's pending line: what batch_store.within_budget reads


def ask_in_rounds(
    settings: Settings,
    endpoint: Endpoint,
    identity: RunIdentity,
    plan: Plan,
    engine_for: Callable[[BatchRound], Engine],
    wait: bool,
    retry_failed: bool = False,
) -> dict[str, Any]:
    """Collect the run's ended batches, answer every item whose answers are in, submit the requests still needed as
    the next round (a pass of the engine `engine_for` makes for it); with `wait`, poll every `batch_poll_s` and go on
    until no item waits. `ask_all` has loaded what a killed call left and made the plan (failures included with
    retry_failed). With `retry_failed`, what failed before this call (lines, whole batches) is asked again."""
    since = now() if retry_failed else None
    if endpoint.base_urls:  # a Batch API: the batch-poll deployment can call the run again
        record_call(settings, identity, public_url(endpoint.base_urls[0]))
    api = batch_api(settings, endpoint)
    totals, submitted, waiting, budget_line = EngineStats(), [], 0, None
    try:
        while True:
            if api is not None:
                collect(settings, api, identity.model)
            if count_pending(settings, plan) == 0:
                waiting = 0
                break
            batch = load_round(settings, identity.model, since)
            stats = asyncio.run(engine_for(batch).run(plan))
            _add(totals, stats)
            allowed, held_line = budgeted(settings, identity, batch.pending)
            budget_line = held_line or budget_line
            if wait and allowed:
                back_off(settings, identity)
            submitted += submit(settings, api, identity, allowed)
            waiting = stats.n_deferred
            if waiting == 0:
                if stats.n_dropped:
                    continue  # a pass that dropped outcomes is planned again
                break  # every item has its outcome (failures stay planned when retried: not asked again here)
            if not wait or api is None:
                break
            if not live_batches(settings, api, identity.model):
                # what its items waited for was collected since this pass began (another run shares the batches):
                # look again now; the next pass answers them or submits them
                continue
            line = wait_line(run_batches(settings, identity.run_id), waiting)
            notice(f"{identity.run_name}: {line}; next look in {settings.batch_poll_s:g} s")
            time.sleep(settings.batch_poll_s)
    finally:
        if api is not None:
            api.close()
    if not waiting:
        finish_call(settings, identity)
    else:
        set_run_status(
            settings.warehouse, identity, "waiting", wait_line(run_batches(settings, identity.run_id), waiting)
        )
    return totals.as_dict() | {"n_waiting": waiting, "batches": submitted, "budget_line": budget_line}


def budgeted(
    settings: Settings, identity: RunIdentity, pending: dict[str, Lines]
) -> tuple[dict[str, Lines], str | None]:
    """The round's lines the request budget allows, and the line saying what it holds back (None: nothing held);
    refused when it holds back everything and no batch of the run is still out."""
    allowed, held, spent = within_budget(settings, identity, pending)
    if not held:
        return allowed, None
    if not allowed and not any(b["collected_at"] is None for b in run_batches(settings, identity.run_id)):
        raise BudgetReached(
            f"request budget of {settings.request_budget:,} reached ({spent:,} requests and batch lines"
            f" spent, {held:,} lines wait); raise --request-budget to go on"
        )
    line = budget_held(settings, spent, len(allowed), held)
    notice(f"{identity.run_name}: {line}")
    return allowed, line


def record_call(settings: Settings, identity: RunIdentity, base_url: str) -> None:
    """Record how this run was called (the flow asking it and its parameters, settings left out): the batch-poll
    deployment calls it again when its batches end (flows/batch_poll.py)."""
    from prefect.runtime import flow_run

    name = flow_run.flow_name
    if not name:
        return  # not inside a flow run: nothing to call again
    parameters = {key: value for key, value in dict(flow_run.parameters).items() if key != "settings"}
    params = {
        "run_id": identity.run_id,
        "kind": identity.kind,
        "flow_name": name,
        "parameters": json.dumps(parameters, default=str),
        "base_url": base_url,
        "model": identity.model,
        "recorded_at": now(),
    }

    def write() -> None:
        with open_migrated(settings.warehouse) as con, transaction(con):
            run_sql(con, "engine/batch/record_call", params)

    retrying(write)


def finish_call(settings: Settings, identity: RunIdentity) -> None:
    """Nothing waits: the batch-poll deployment leaves the run alone from now on."""

    def write() -> None:
        with open_migrated(settings.warehouse) as con:
            run_sql(con, "engine/batch/finish_call", {"run_id": identity.run_id, "finished_at": now()})

    retrying(write)


def back_off(settings: Settings, identity: RunIdentity) -> None:
    """Before a round goes after batches that failed as a whole: wait batch_poll_s x 2^(k-1) for the k failed in
    a row (at most 16 looks), so a provider failing every batch is not sent the next one at once."""
    in_a_row = 0
    for batch in reversed(run_batches(settings, identity.run_id)):
        if batch["status"] != "failed":
            break
        in_a_row += 1
    if in_a_row:
        delay = settings.batch_poll_s * min(2 ** (in_a_row - 1), 16)
        notice(f"{identity.run_name}: {in_a_row} batch(es) in a row failed; next round in {delay:g} s")
        time.sleep(delay)


def budget_held(settings: Settings, spent: int, n_allowed: int, held: int) -> str:
    """What the request budget held back of a round, in one line."""
    return (
        f"request budget {settings.request_budget:,} ({spent:,} spent): {n_allowed:,} lines submitted, {held:,} held"
        " back (raise --request-budget to submit them)"
    )


def _add(totals: EngineStats, stats: EngineStats) -> None:
    for name in ("n_items", "n_cached", "n_failures", "n_dropped", "passes"):
        setattr(totals, name, getattr(totals, name) + getattr(stats, name))
