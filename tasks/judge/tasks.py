"""Judge tasks: plan the work, judge it chunk by chunk into shards, load the shards, gate, publish."""

from __future__ import annotations

import asyncio
import hashlib
import json
from dataclasses import asdict
from typing import Any

import polars as pl
from prefect import task
from prefect.cache_policies import NO_CACHE

from peras.errors import CheckFailed, UsageError
from peras.llm.client import LLMClient
from peras.prompting import Personality, build_label_messages, request_hash
from peras.settings import Settings
from peras.sql import query_frame, run_sql
from peras.warehouse import connect, now, open_migrated
from tasks.engine.shards import ShardWriter, move_shards
from tasks.judge.judging import Answer, ChunkJudge, ChunkStats, JudgeConfig, WorkItem

Pairs = dict[tuple[str, str], tuple[str, str]]


@task(cache_policy=NO_CACHE)
def load_pairs(settings: Settings, collection_id: str, subset_name: str | None, limit: int | None) -> Pairs:
    """The judged pairs of a collection or subset, with texts: {(query_id, doc_id): (query, passage)}."""
    params = {"collection_id": collection_id, "subset_name": subset_name}
    with open_migrated(settings.warehouse) as con:
        has_collection, has_subset = run_sql(con, "judge/select_subset_exists", params).fetchone()
        if not has_collection:
            raise UsageError(
                f"collection {collection_id!r} is not in the warehouse: run `peras ingest {collection_id}`"
            )
        if not has_subset:
            raise UsageError(
                f"collection {collection_id!r} has no subset {subset_name!r} (see `peras subsets`)"
            )
        rows = run_sql(con, "judge/select_pairs", params).fetchall()
    rows = rows[:limit] if limit else rows
    return {(q, d): (qt, pt) for q, d, qt, pt in rows}


@task(cache_policy=NO_CACHE)
def register_run(
    settings: Settings,
    run_name: str,
    collection_id: str,
    subset_name: str | None,
    config: JudgeConfig,
    run_params: dict[str, Any],
) -> str:
    """Create the run, or check that an existing run of that name asks the same way (then resume it)."""
    params = json.dumps(run_params, sort_keys=True)
    with open_migrated(settings.warehouse) as con:
        row = run_sql(con, "judge/select_run", {"run_name": run_name}).fetchone()
        if row is None:
            run_sql(
                con,
                "judge/insert_run",
                {
                    "run_id": config.run_id,
                    "run_name": run_name,
                    "collection_id": collection_id,
                    "subset_name": subset_name,
                    "model": config.model,
                    "backend": config.backend,
                    "params": params,
                    "created_at": now(),
                },
            )
            return config.run_id
    run_id, have_collection, have_subset, have_model, have_params, _ = row
    if (have_collection, have_subset, have_model) != (collection_id, subset_name, config.model) or json.loads(
        have_params
    ) != json.loads(params):
        raise UsageError(f"run {run_name!r} already exists with other settings; choose another --run-name")
    return run_id


def run_id_for(run_name: str) -> str:
    """Stable id of a run name (so shards of a killed run are found again)."""
    return hashlib.sha256(run_name.encode()).hexdigest()[:16]


@task(cache_policy=NO_CACHE)
def store_personalities(settings: Settings, personalities: list[Personality]) -> None:
    """Record the conditions used, with their exact instruction text."""
    frame = pl.DataFrame(
        [
            {
                "personality": p.code,
                "name": p.name,
                "trait": p.trait,
                "pole": p.pole,
                "instruction": p.instruction,
                "source": "builtin" if p.is_builtin else str(p.source),
            }
            for p in personalities
        ]
    )
    with open_migrated(settings.warehouse) as con:
        con.register("staged_personalities", frame.to_arrow())
        run_sql(con, "judge/upsert_personalities")


@task(cache_policy=NO_CACHE)
def load_shards(settings: Settings, run_id: str) -> int:
    """Move every shard of the run into the warehouse (idempotent), then delete the shard files."""
    return move_shards(settings.warehouse, settings.shards / run_id,
                       {"requests": "judge/load_shard_requests", "judgments": "judge/load_shard_judgments"})


@task(cache_policy=NO_CACHE)
def plan_work(
    settings: Settings,
    run_id: str,
    pairs: Pairs,
    personalities: list[str],
    cot_settings: list[bool],
    methods: list[str],
) -> list[WorkItem]:
    """Items not yet judged, ordered so that prompts sharing a prefix (personality, setting) go together."""
    with connect(settings.warehouse, read_only=True) as con:
        done = set(run_sql(con, "judge/select_done", {"run_id": run_id}).fetchall())
    return [
        WorkItem(query_id, doc_id, personality, cot, method)
        for personality in personalities
        for cot in cot_settings
        for method in methods
        for query_id, doc_id in pairs
        if (query_id, doc_id, personality, cot, method) not in done
    ]


@task(cache_policy=NO_CACHE)
def load_cached_answers(
    settings: Settings,
    config: JudgeConfig,
    items: list[WorkItem],
    pairs: Pairs,
    personalities: dict[str, Personality],
) -> dict[str, Answer]:
    """Answers already stored for the label requests these items will send (e.g. after a kill)."""
    wanted = {
        request_hash(
            config.model,
            build_label_messages(personalities[i.personality], *pairs[(i.query_id, i.doc_id)], i.cot),
            config.label_params(i.cot, i.method),
            0,
        )
        for i in items
        if i.method != "sampling"
    }
    if not wanted:
        return {}
    with connect(settings.warehouse, read_only=True) as con:
        con.register("wanted_requests", pl.DataFrame({"request_id": sorted(wanted)}).to_arrow())
        rows = run_sql(con, "judge/select_cached_requests").fetchall()
    return {
        rid: Answer(rid, value, ok, reason or "", json.loads(lp) if lp else None)
        for rid, value, ok, reason, lp in rows
    }


@task(cache_policy=NO_CACHE, retries=2, retry_delay_seconds=5)
def judge_chunk(
    settings: Settings,
    base_urls: list[str],
    config: JudgeConfig,
    chunk_name: str,
    items: list[WorkItem],
    pairs: Pairs,
    personalities: dict[str, Personality],
    cache: dict[str, Answer],
    bar: Any = None,
) -> dict[str, Any]:
    """Judge one chunk (hundreds of items) with async concurrency, journaling to its shard."""
    texts = {(i.query_id, i.doc_id): pairs[(i.query_id, i.doc_id)] for i in items}
    with ShardWriter(settings.shards / config.run_id, chunk_name) as writer:
        stats = asyncio.run(
            _judge(settings, base_urls, config, items, texts, personalities, cache, writer, bar)
        )
    return asdict(stats)


async def _judge(
    settings: Settings,
    base_urls: list[str],
    config: JudgeConfig,
    items: list[WorkItem],
    texts: Pairs,
    personalities: dict[str, Personality],
    cache: dict[str, Answer],
    writer: ShardWriter,
    bar: Any,
) -> ChunkStats:
    async with run_client(settings, base_urls, config.model) as client:
        judge = ChunkJudge(client, config, personalities, texts, cache, writer, bar.advance if bar else None)
        return await judge.run(items, settings.concurrency * len(base_urls))


def run_client(settings: Settings, base_urls: list[str], model: str) -> LLMClient:
    """The client a judge or priming run sends through: API key variable, concurrency, timeout, retries, budget."""
    return LLMClient(
        base_urls,
        model,
        settings.api_key_env,
        settings.concurrency,
        settings.request_timeout_s,
        settings.max_retries,
        settings.request_budget,
    )


@task(cache_policy=NO_CACHE)
def check_endpoint(settings: Settings, base_urls: list[str], model: str) -> None:
    """Fail early, with one clear line, if the endpoint is unreachable or does not serve the model."""

    async def ready() -> None:
        async with LLMClient(
            base_urls, model, settings.api_key_env, settings.concurrency, settings.request_timeout_s, 0
        ) as client:
            await client.check_ready()

    asyncio.run(ready())


@task(cache_policy=NO_CACHE)
def check_judge_run(settings: Settings, run_id: str, n_planned: int) -> pl.DataFrame:
    """The judge gate: complete, in range, parse failures under the threshold; else the run stays unpublished."""
    with open_migrated(settings.warehouse) as con:
        problems = run_sql(
            con,
            "judge/assert_run_valid",
            {"run_id": run_id, "n_planned": n_planned, "max_share": settings.max_parse_failure_share},
        ).fetchall()
        shares = query_frame(con, "judge/select_failure_shares", {"run_id": run_id})
        status = "failed_check" if problems else "published"
        run_sql(con, "judge/set_run_status", {"run_id": run_id, "status": status, "finished_at": now()})
    if problems:
        lines = "\n".join(f"  [{problem}] {detail}" for problem, detail in problems[:20])
        raise CheckFailed(
            f"judge gate failed; run not published (its judgments are kept for inspection):\n{lines}"
        )
    return shares


def chunked(items: list[WorkItem], size: int) -> list[list[WorkItem]]:
    """Consecutive chunks of at most `size` items (order preserved: shared prefixes stay together)."""
    return [items[start : start + size] for start in range(0, len(items), size)]
