"""The engine's Prefect tasks, used by every LLM stage's flow: check the endpoint, load shards, ask, record."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any, TypeVar, cast

import pyarrow as pa
from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.utilities.annotations import quote

from peras import lake
from peras.errors import BudgetReached, UsageError
from peras.llm import aio
from peras.llm.client import LLMClient
from peras.llm.constraints import FREE, Probe, probe_dialect, probe_logprobs, resolve_answer_format
from peras.progress import Counts, asking
from peras.prompting import Personality
from peras.settings import Settings
from peras.sql import render_sql, run_sql, run_statements
from peras.warehouse import connect, open_migrated, publish_snapshot, retrying, transaction
from tasks.engine.batch import BatchRound
from tasks.engine.batch_tasks import ask_in_rounds
from tasks.engine.endpoint import Endpoint, Probed, known_format, make_client
from tasks.engine.engine import Engine
from tasks.engine.run_status import count_pending, notice
from tasks.engine.runs import run_params, run_spent
from tasks.engine.shards import load_shards
from tasks.engine.spec import EngineStats, Plan, RetryingPlan, RunIdentity, Stage
from tasks.engine.stage import declaration
from tasks.engine.store import WarehouseThread

T = TypeVar("T")
# The personality conditions as sql/engine/upsert_changed.sql stores them (a changed instruction replaces the row).
PERSONALITY_ROWS = {
    "target": "personalities",
    "staged": "staged_personalities",
    "key": "personality",
    "columns": ["name", "trait", "pole", "instruction", "source"],
}


def opaque(value: T) -> T:
    """Pass a large value to a task without Prefect walking every element (to find futures) on each call.

    Without it, judging DL19 against a fast server spent most of its time in Prefect's parameter resolution.
    """
    return cast(T, quote(value))


@task(cache_policy=NO_CACHE)
def check_endpoint(
    settings: Settings, endpoint: Endpoint, resumed: Probed | None = None, logprobs: bool = False
) -> Endpoint:
    """Fail early, with one clear line, if the endpoint is unreachable or does not serve the model; then find the
    answer format its requests are sent in and, with `logprobs` (the run asks for log-probabilities), whether it
    returns them (the endpoint returned carries both, and the requests the probe sent); the format is said once on
    the terminal. `resumed`: what the run being resumed records (nothing for a new run).

    The probe's requests are part of the run's --request-budget: a budget they would pass stops the command here,
    in one line, before the run is claimed (no request beyond the budget is sent)."""
    if not endpoint.base_urls:
        # batch mode's files for vLLM's run-batch: no server to check or probe
        return replace(endpoint, answer_format=FREE, answer_probe="no server to probe (batch files)")
    resumed = resumed or Probed()

    async def ready() -> tuple[Probe, bool | None, int]:
        async with make_client(settings, endpoint, resumed.spent) as client:
            await client.check_ready()
            try:
                probe = await answer_probe(settings, endpoint, client, resumed.answer_format)
                found = await returns_logprobs(settings, endpoint, client, resumed.logprobs) if logprobs else None
            except BudgetReached as exc:
                raise UsageError(probe_over_budget(settings, resumed.spent, client.requests_sent, logprobs)) from exc
            return probe, found, client.requests_sent

    probe, found, sent = asyncio.run(ready())
    if settings.answer_format != "free":  # asked free by the user: nothing to tell; else said once, never silent
        notice(probe.line)
    return replace(
        endpoint, answer_format=probe.answer_format, answer_probe=probe.found, probe_requests=sent, logprobs=found
    )


def probe_over_budget(settings: Settings, spent: int, sent: int, logprobs: bool) -> str:
    """The one line of a --request-budget the probe used up before it found what it asks."""
    more = ", 1 more for log-probabilities" if logprobs else ""
    earlier = f"; the run had spent {spent:,} before" if spent else ""
    return (
        f"--request-budget {settings.request_budget:,} is used up by the answer-format probe ({sent:,} of its 1-5 tiny"
        f" requests{more} sent{earlier}): raise it, or give --answer-format free, which sends no probe"
    )


async def answer_probe(settings: Settings, endpoint: Endpoint, client: LLMClient, resumed: str | None) -> Probe:
    """The format known without a probe (tasks/engine/endpoint.py known_format: the one rule), otherwise what the
    probe finds (one or two tiny requests, peras/llm/constraints.py)."""
    known = known_format(settings.answer_format, resumed, endpoint.is_embedded)
    if known is not None:
        return known
    return resolve_answer_format(settings.answer_format, await probe_dialect(client.chat))


async def returns_logprobs(
    settings: Settings, endpoint: Endpoint, client: LLMClient, resumed: bool | None
) -> bool | None:
    """Whether the endpoint returns log-probabilities: what a resumed run found (a rerun sends nothing); the embedded
    llama.cpp server does; --answer-format free sends no probe (None: not known, asked unchecked); otherwise one tiny
    request asks (peras/llm/constraints.py probe_logprobs)."""
    if resumed is not None:
        return resumed
    if endpoint.is_embedded:
        return True
    if settings.answer_format == "free":
        return None
    return await probe_logprobs(client.chat)


@task(cache_policy=NO_CACHE)
def identify_warehouse(settings: Settings) -> str:
    """The warehouse's identity (its shards are kept under it), migrating the warehouse if needed."""
    with open_migrated(settings.warehouse) as con:
        return str(run_sql(con, "engine/select_warehouse_id").fetchone()[0])


@task(cache_policy=NO_CACHE)
def store_personalities(settings: Settings, personalities: list[Personality]) -> None:
    """Record the conditions used, with their exact instruction text."""
    frame = pa.table(
        {
            "personality": pa.array([p.code for p in personalities], pa.string()),
            "name": pa.array([p.name for p in personalities], pa.string()),
            "trait": pa.array([p.trait for p in personalities], pa.string()),
            "pole": pa.array([p.pole for p in personalities], pa.string()),
            "instruction": pa.array([p.instruction for p in personalities], pa.string()),
            "source": pa.array(["builtin" if p.is_builtin else str(p.source) for p in personalities], pa.string()),
        }
    )

    def store() -> None:
        with open_migrated(settings.warehouse) as con:
            con.register("staged_personalities", frame)
            with transaction(con):
                run_statements(con, render_sql("engine/upsert_changed", PERSONALITY_ROWS))
            if lake.in_lake(con):  # no keys: a run starting at the same moment may have stored them too
                with transaction(con):
                    run_sql(con, "engine/dedupe_personalities")

    retrying(store)


@task(cache_policy=NO_CACHE)
def ask_all(
    settings: Settings,
    endpoint: Endpoint,
    identity: RunIdentity,
    stage: Stage,
    plan: Plan,
    rows_per_shard: int,
    retry_failed: bool = False,
    wait: bool = False,
) -> dict[str, Any]:
    """Ask every planned item through the engine: one bounded stream for the whole run, loaded as it goes.

    Shards an earlier attempt left (a killed process) are loaded first, so what they hold is not asked again;
    when this returns, everything asked is in the warehouse.
    """
    batch = settings.mode == "batch" and declaration(identity.kind).batch
    if settings.mode != "online" and not batch:
        raise UsageError(f"--mode {settings.mode} is not available for {identity.kind}; ask it with --mode online")
    load_shards(settings.warehouse, settings.shards, identity)
    if retry_failed and isinstance(plan, RetryingPlan):
        plan = plan.with_failures()  # else its failed items count as done and are never asked again
    if batch:

        def engine_for(round_: BatchRound) -> Engine:
            """A pass over one batch round; the answer format's constraint joins each line as an online request's."""
            return Engine(
                None, identity, stage, settings.warehouse, settings.shards, settings.concurrency, rows_per_shard,
                retry_failed, batch=round_, answer_format=endpoint.answer_format,
            )  # fmt: skip

        return ask_in_rounds(settings, endpoint, identity, plan, engine_for, wait, retry_failed)
    return ask_online(settings, endpoint, identity, stage, plan, rows_per_shard, retry_failed)


def ask_online(
    settings: Settings,
    endpoint: Endpoint,
    identity: RunIdentity,
    stage: Stage,
    plan: Plan,
    rows_per_shard: int,
    retry_failed: bool,
) -> dict[str, Any]:
    """The online run: the planned items not yet done, one bounded stream, with live counts and progress."""
    # The count's read-only connection is the engine's first; the engine closes the thread as its run ends.
    with contextlib.closing(WarehouseThread(settings.warehouse)) as thread:
        n_items = count_pending(settings, plan, thread)
        if n_items == 0:
            return EngineStats().as_dict()
        spent = requests_spent(settings, identity)
        progress = ProgressArtifact(identity, n_items)
        description = f"{identity.kind} {identity.run_name}"
        with asking(description, n_items, settings.progress_interval_s, on_tick=progress.update_counts) as counts:

            async def run() -> EngineStats:
                async with make_client(settings, endpoint, spent, on_notice=notice) as client:
                    client.counts = counts  # requests sent/answered/failed, live
                    engine = Engine(
                        client,
                        identity,
                        stage,
                        settings.warehouse,
                        settings.shards,
                        settings.concurrency * len(endpoint.base_urls),
                        rows_per_shard,
                        retry_failed,
                        on_item=counts.item_done,
                        on_shard=lambda stats: shard_loaded(settings, progress, stats),
                        answer_format=endpoint.answer_format,
                        thread=thread,
                        load_interval_s=settings.load_interval_s,
                    )
                    return await engine.run(plan)

            with settled_heap():
                stats = aio.run(run(), settings.event_loop)
    with contextlib.suppress(Exception):  # the last counts, whenever the last tick was
        progress.update_counts(counts)
    progress.update(stats)
    return stats.as_dict()


@contextlib.contextmanager
def settled_heap() -> Iterator[None]:
    """Leave what exists before the run (Prefect, the plan's pairs: ~250,000 objects) out of garbage collection
    while it runs, and put it back after (`gc.freeze`; a worker process runs many flows).

    A full collection walks every tracked object, and a run allocates enough to trigger dozens: at concurrency 512
    they took 0.27 s of a 5.1 s run, 0.09 s frozen, and the run judged 3.5% more per second (bench_engine.py).
    """
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def run_counts(identity: RunIdentity, endpoint: Endpoint, stats: dict[str, Any]) -> dict[str, Any]:
    """What every LLM stage's summary starts with: the run, the model asked, and what the engine did."""
    return {
        "run_name": identity.run_name,
        "run_id": identity.run_id,
        "model": endpoint.model,
        "backend": endpoint.backend,
        "n_judged_now": stats["n_items"],
        "n_sent": stats["n_sent"],
        "n_http": stats["n_http"],
        "n_cached": stats["n_cached"],
        "n_dropped": stats["n_dropped"],
    }


def shard_loaded(settings: Settings, progress: ProgressArtifact, stats: EngineStats) -> None:
    """After each shard is loaded: progress in the UI, and (at most every interval, the first one an interval after the
    asking began) a fresh analysts' snapshot. A run shorter than the interval copies the warehouse once, as it ends,
    not also after its first shard (a copy of the whole file: a small run's largest write)."""
    progress.update(stats)
    if time.monotonic() - progress.started >= settings.analyst_snapshot_interval_s:
        publish_snapshot(settings, throttled=True)


def requests_spent(settings: Settings, identity: RunIdentity) -> int:
    """HTTP requests the run's earlier attempts and every call's probes sent, answered or not: the run-wide budget
    counts from here."""
    if settings.request_budget is None:
        return 0
    with connect(settings.warehouse, read_only=True) as con:
        found = run_params(con, declaration(identity.kind), identity.run_name)
        return run_spent(con, identity.run_id, found[1] if found else {})


class ProgressArtifact:
    """A Prefect progress artifact for the run, updated each time a shard is loaded (seen in the UI)."""

    def __init__(self, identity: RunIdentity, n_items: int) -> None:
        self.n_items = n_items
        self.identity = identity
        self.started = time.monotonic()  # the asking began
        self.artifact_id: Any = None
        with contextlib.suppress(Exception):  # an artifact is a nicety; no Prefect context, no artifact
            from prefect.artifacts import create_progress_artifact

            self.artifact_id = create_progress_artifact(
                progress=0.0,
                key=f"{identity.kind}-progress-{identity.run_id}",
                description=f"{identity.kind} run {identity.run_name}: items done of {n_items:,}",
            )

    def update_counts(self, counts: Counts) -> None:
        """Items done and the requests behind them, while asking (an item ends after all its requests)."""
        if self.artifact_id is None:
            return
        from prefect.artifacts import update_progress_artifact

        update_progress_artifact(
            self.artifact_id,
            progress=min(100.0, 100.0 * counts.items / max(self.n_items, 1)),
            description=f"{self.identity.kind} run {self.identity.run_name}: {counts.items:,} of {self.n_items:,} "
            f"items done; {counts.requests_text()}",
        )

    def update(self, stats: EngineStats) -> None:
        """Percent of the planned items done; counts in the flow log."""
        if self.artifact_id is None:
            return
        with contextlib.suppress(Exception):
            from prefect.artifacts import update_progress_artifact

            update_progress_artifact(self.artifact_id, progress=min(100.0, 100.0 * stats.n_items / self.n_items))
            get_run_logger().info(
                "%s: %d of %d items, %d requests sent, %d answers reused, %d failures",
                self.identity.run_name,
                stats.n_items,
                self.n_items,
                stats.n_sent,
                stats.n_cached,
                stats.n_failures,
            )
