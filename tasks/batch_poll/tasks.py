"""The batch-poll stage: every run with live batches at a Batch API is collected and, once its batches have ended,
called again as it was last called (next round, or gate and publish): a batch-mode study runs unattended.

The flow (flows/batch_poll.py) calls each run's own flow; these tasks find what to poll, collect it, and give each
run's call with the settings it asks under (the poller's environment, the run's Batch API and model, batch mode).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from peras.llm.batches import BatchAPI
from peras.settings import Settings
from peras.sql import run_sql
from peras.warehouse import connect, open_migrated
from tasks.engine.batch_store import collect


@dataclass(frozen=True)
class RunCall:
    """A run to call again: its flow, the parameters it was called with, and where its batches went."""

    run_id: str
    kind: str
    flow_name: str
    parameters: dict[str, Any]
    base_url: str
    model: str


@task(cache_policy=NO_CACHE)
def collect_live_batches(settings: Settings) -> int:
    """Poll every Batch API holding live batches (once each) and store what ended; how many live batches it polled."""
    with open_migrated(settings.warehouse) as con:  # migrated: the poller may be the first to open a new warehouse
        endpoints = run_sql(con, "batch_poll/select_live_endpoints").fetchall()
    for base_url, model, _ in endpoints:
        api = BatchAPI(base_url, settings.api_key_env, settings.request_timeout_s)
        try:
            collect(settings, api, model)
        finally:
            api.close()
    return sum(int(n_live) for _, _, n_live in endpoints)


@task(cache_policy=NO_CACHE)
def calls_to_make(settings: Settings) -> list[RunCall]:
    """The waiting batch-mode runs with no live batch of their own and answers collected since their last call,
    each with how it was last called."""
    with connect(settings.warehouse, read_only=True) as con:
        rows = run_sql(con, "batch_poll/select_calls").fetchall()
    return [
        RunCall(run_id, kind, flow, json.loads(parameters), base_url, model)
        for run_id, kind, flow, parameters, base_url, model in rows
    ]


def call_settings(settings: Settings, call: RunCall) -> Settings:
    """The settings a run is called again with: the poller's, at the run's Batch API and model, in batch mode,
    without waiting (the next poll looks again)."""
    return settings.model_copy(
        update={"base_urls": [call.base_url], "model": call.model, "mode": "batch", "batch_wait": False}
    )


@task(cache_policy=NO_CACHE)
def summarize_poll(n_polled: int, outcomes: list[str]) -> dict[str, Any]:
    """What one poll did: the live batches it polled, and for each run called again what came of it (one line)."""
    return {"n_polled": n_polled, "n_called": len(outcomes), "runs": outcomes}


def unique_calls(calls: list[RunCall]) -> list[RunCall]:
    """One call per flow and parameters (recognize asks two runs in one call), in order."""
    seen: set[str] = set()
    unique = []
    for call in calls:
        key = json.dumps([call.flow_name, call.parameters], sort_keys=True)
        if key not in seen:
            seen.add(key)
            unique.append(call)
    return unique


def outcome_line(call: RunCall, state: Any) -> str:
    """What calling a run again did (its flow run's final state; not a task: a task would be handed the state's
    result instead), in one line: still waiting (and what it submitted), done, or why it failed."""
    if state is None:
        return f"{call.kind} run {call.run_id}: batch-poll does not call flow {call.flow_name}; run its command again"
    if not state.is_completed():
        return f"{call.flow_name} run {call.run_id}: {state.name}: {state.message}"
    result = state.result()
    name = result.get("run_name", call.run_id)
    if result.get("n_waiting"):
        batches = ", ".join(result.get("batches") or []) or "nothing new"
        return f"{call.flow_name} {name}: {result['n_waiting']:,} items wait; submitted {batches}"
    return f"{call.flow_name} {name}: done ({result.get('n_judged_now', 0):,} answered now)"
