"""Priming tasks: register the run, ask the planned batches chunk by chunk into shards, load them, gate.

The trials themselves are drawn in tasks/priming/draws.py, the statistics computed in tasks/priming/stats.py.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import polars as pl
from prefect import task
from prefect.cache_policies import NO_CACHE

from peras.errors import CheckFailed, UsageError
from peras.prompting import Personality, request_hash
from peras.settings import Settings
from peras.sql import run_sql
from peras.warehouse import connect, now, open_migrated
from tasks.engine.shards import ShardWriter, move_shards
from tasks.judge.tasks import run_client
from tasks.priming.draws import Pools, planned_frame
from tasks.priming.judging import BatchConfig, BatchItem, BatchJudge
from tasks.priming.prompt import build_batch_messages


@task(cache_policy=NO_CACHE)
def register_priming_run(
    settings: Settings,
    run_name: str,
    collection_id: str,
    config: BatchConfig,
    seed: int,
    run_params: dict[str, Any],
    scope: dict[str, Any],
) -> None:
    """Create the run, or check that an existing run of that name asks the same way (then extend it)."""
    params = json.dumps(run_params, sort_keys=True)
    with open_migrated(settings.warehouse) as con:
        found = run_sql(con, "priming/select_run", {"run_name": run_name}).fetchall()
        row = found[0] if found else None
        if row is not None:
            _, have_collection, have_model, have_seed, have_params = row
            if (have_collection, have_model, have_seed) != (collection_id, config.model, seed) or json.loads(
                have_params
            ) != json.loads(params):
                raise UsageError(
                    f"priming run {run_name!r} already exists with another collection, model, seed, prompt or "
                    "request parameters; choose another --run-name"
                )
        values = {
            "priming_run_id": config.run_id,
            "run_name": run_name,
            "collection_id": collection_id,
            "model": config.model,
            "backend": config.backend,
            "seed": seed,
            "params": params,
            "scope": json.dumps(scope),
            "created_at": now(),
        }
        run_sql(con, "priming/insert_run" if row is None else "priming/start_run", values)


@task(cache_policy=NO_CACHE)
def load_priming_shards(settings: Settings, run_id: str) -> int:
    """Move the run's shards into the warehouse (requests, then batch outcomes; idempotent), then delete them."""
    return move_shards(settings.warehouse, shard_dir(settings, run_id),
                       {"requests": "judge/load_shard_requests", "judgments": "priming/load_shard_batches"})


def shard_dir(settings: Settings, run_id: str) -> Path:
    """Priming shards live apart from judge shards."""
    return settings.shards / "priming" / run_id


@task(cache_policy=NO_CACHE)
def select_pending(settings: Settings, run_id: str, planned: list[BatchItem]) -> list[BatchItem]:
    """The planned batches that have no stored outcome yet."""
    with connect(settings.warehouse, read_only=True) as con:
        done = set(run_sql(con, "priming/select_done", {"priming_run_id": run_id}).fetchall())
    return [
        i for i in planned if (i.query_id, i.trial, i.n_prologue, i.n_epilogue, i.personality, i.condition) not in done
    ]


@task(cache_policy=NO_CACHE)
def load_cached_answers(
    settings: Settings,
    config: BatchConfig,
    items: list[BatchItem],
    pools: Pools,
    personalities: dict[str, Personality],
) -> dict[str, str]:
    """Raw answers already stored for the requests these batches will send (any run, e.g. a killed one)."""
    wanted = {
        request_hash(config.model, _messages_of(item, pools, personalities), config.params(), 0) for item in items
    }
    if not wanted:
        return {}
    with connect(settings.warehouse, read_only=True) as con:
        con.register("wanted_requests", pl.DataFrame({"request_id": sorted(wanted)}).to_arrow())
        rows = run_sql(con, "priming/select_cached_answers").fetchall()
    return dict(rows)


def _messages_of(item: BatchItem, pools: Pools, personalities: dict[str, Personality]) -> list[dict[str, str]]:
    passages = [(doc_id, pools.texts[doc_id]) for doc_id in item.doc_ids]
    return build_batch_messages(personalities[item.personality], pools.topics[item.query_id].query, passages)


@task(cache_policy=NO_CACHE, retries=2, retry_delay_seconds=5)
def judge_batches(
    settings: Settings,
    base_urls: list[str],
    config: BatchConfig,
    chunk_name: str,
    items: list[BatchItem],
    pools: Pools,
    personalities: dict[str, Personality],
    cache: dict[str, str],
    bar: Any = None,
) -> dict[str, Any]:
    """Ask one chunk of batches with async concurrency, journaling to its shard."""
    queries = {query_id: pool.query for query_id, pool in pools.topics.items()}
    texts = {doc_id: pools.texts[doc_id] for item in items for doc_id in item.doc_ids}

    async def ask_all() -> dict[str, Any]:
        async with run_client(settings, base_urls, config.model) as client:
            on_item = bar.advance if bar else None
            judge = BatchJudge(client, config, personalities, queries, texts, cache, writer, on_item)
            return asdict(await judge.run(items, settings.concurrency * len(base_urls)))

    with ShardWriter(shard_dir(settings, config.run_id), chunk_name) as writer:
        return asyncio.run(ask_all())


@task(cache_policy=NO_CACHE)
def check_priming_run(settings: Settings, run_id: str, planned: list[BatchItem]) -> int:
    """The priming gate (sql/priming/assert_run_valid.sql); on failure the statistics stay unpublished.

    Returns the number of planned batches recorded as failures (under the threshold when it returns).
    """
    with open_migrated(settings.warehouse) as con:
        con.register("priming_planned", planned_frame(planned).to_arrow())
        problems = run_sql(
            con,
            "priming/assert_run_valid",
            {"priming_run_id": run_id, "max_share": settings.max_parse_failure_share},
        ).fetchall()
        [(n_failures,)] = run_sql(con, "priming/count_failures", {"priming_run_id": run_id}).fetchall()
        if problems:
            run_sql(
                con,
                "priming/set_run_status",
                {"priming_run_id": run_id, "status": "failed_check", "finished_at": now()},
            )
    if problems:
        lines = "\n".join(f"  [{problem}] {detail}" for problem, detail in problems[:20])
        raise CheckFailed(
            f"priming gate failed; statistics not published (the batches are kept for inspection):\n{lines}"
        )
    return int(n_failures)


def chunked(items: list[BatchItem], size: int) -> list[list[BatchItem]]:
    """Consecutive chunks of at most `size` batches (order kept: a personality's batches stay together)."""
    return [items[start : start + size] for start in range(0, len(items), size)]
