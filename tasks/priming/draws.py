"""Priming trials: choose the topics, read their candidate passages, draw every trial, plan the batches.

A trial of a topic and a batch setting (PL, EL) draws EL qrel-2 passages (the epilogue), PL qrel-3 passages
(the high-threshold prologue, HT) and PL qrel-0 passages (the low-threshold prologue, LT); the batches are
HT + epilogue and LT + epilogue, in drawn order. The draw depends only on the seed, the topic, the trial
number and the setting (a numpy Generator seeded from a SeedSequence of those), over the candidate ids
sorted as strings: adding topics, trials, settings or personalities never changes an existing draw.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import polars as pl
from prefect import task
from prefect.cache_policies import NO_CACHE

from peras.errors import UsageError
from peras.settings import Settings
from peras.sql import query_frame, run_sql
from peras.warehouse import connect
from tasks.priming.asking import CONDITIONS, BatchItem
from tasks.priming.prompt import batch_prompt

DEFAULT_BATCH_SETTINGS = ((4, 4), (4, 8), (8, 8))
LEVELS = {"epilogue": 2, "high": 3, "low": 0}


@dataclass(frozen=True)
class TopicPool:
    """A topic's query and its candidate passage ids per relevance level (sorted as strings)."""

    query_id: str
    query: str
    levels: dict[int, tuple[str, ...]]


@dataclass(frozen=True)
class Pools:
    """The chosen topics' pools, in topic order, and the text of every candidate passage."""

    topics: dict[str, TopicPool]
    texts: dict[str, str]


@dataclass(frozen=True, slots=True)
class Draw:
    """One trial of one topic and setting: the shared epilogue and the two prologues, in batch order."""

    query_id: str
    trial: int
    n_prologue: int
    n_epilogue: int
    epilogue: tuple[str, ...]
    high: tuple[str, ...]
    low: tuple[str, ...]

    def batch(self, condition: str) -> tuple[str, ...]:
        """The passage ids of the HT or LT batch: prologue, then epilogue."""
        return (self.high if condition == "HT" else self.low) + self.epilogue


def check_batch_settings(batch_settings: list[tuple[int, int]] | None) -> list[tuple[int, int]]:
    """(PL, EL) pairs, each at least 1, in the order given, without repeats."""
    chosen = [(int(pl_), int(el)) for pl_, el in (batch_settings or DEFAULT_BATCH_SETTINGS)]
    bad = [f"{pl_},{el}" for pl_, el in chosen if pl_ < 1 or el < 1]
    if bad:
        raise UsageError(f"batch setting {bad[0]} needs a prologue and an epilogue of at least 1 passage")
    return list(dict.fromkeys(chosen))


@task(cache_policy=NO_CACHE)
def choose_topics(
    settings: Settings,
    collection_id: str,
    topics: list[str] | None,
    min_per_level: int,
    limit_topics: int | None,
    layouts: list[tuple[int, int]],
) -> list[str]:
    """The given topics, or those with at least `min_per_level` judged passages at every level 0-3."""
    with connect(settings.warehouse, read_only=True) as con:
        [(has_collection,)] = run_sql(
            con, "priming/select_collection_exists", {"collection_id": collection_id}
        ).fetchall()
        if not has_collection:
            raise UsageError(
                f"collection {collection_id!r} is not in the warehouse: run `peras ingest {collection_id}`"
            )
        counts = query_frame(con, "priming/select_topic_levels", {"collection_id": collection_id})
    by_topic = {row["query_id"]: row for row in counts.iter_rows(named=True)}
    if topics:
        unknown = [t for t in topics if t not in by_topic]
        if unknown:
            raise UsageError(f"topic {unknown[0]} has no judged passages in {collection_id}")
        chosen = list(dict.fromkeys(topics))
    else:
        chosen = [q for q, row in by_topic.items() if all(row[f"n_level_{k}"] >= min_per_level for k in range(4))]
        if not chosen:
            raise UsageError(f"no topic of {collection_id} has {min_per_level} judged passages at every level")
    if limit_topics is not None and limit_topics < 1:
        raise UsageError(f"limit_topics must be at least 1, not {limit_topics}")
    chosen = chosen[:limit_topics] if limit_topics else chosen
    _check_enough(by_topic, chosen, layouts)
    return chosen


def _check_enough(by_topic: dict[str, dict[str, Any]], topics: list[str], layouts: list[tuple[int, int]]) -> None:
    need = {2: max(el for _, el in layouts), 3: max(p for p, _ in layouts), 0: max(p for p, _ in layouts)}
    for query_id in topics:
        for level, n in need.items():
            have = by_topic[query_id][f"n_level_{level}"]
            if have < n:
                raise UsageError(f"topic {query_id} has {have} passages at level {level}; the batch settings need {n}")


@task(cache_policy=NO_CACHE)
def load_pools(settings: Settings, collection_id: str, topics: list[str]) -> Pools:
    """The candidate passages (levels 0, 2, 3) of each topic, with the query and passage texts."""
    with connect(settings.warehouse, read_only=True) as con:
        frame = query_frame(con, "priming/select_pools", {"collection_id": collection_id, "query_ids": topics})
    pools: dict[str, TopicPool] = {}
    for query_id in topics:
        rows = frame.filter(pl.col("query_id") == query_id)
        levels = {
            level: tuple(sorted(rows.filter(pl.col("relevance") == level)["doc_id"].to_list()))
            for level in LEVELS.values()
        }
        pools[query_id] = TopicPool(query_id, rows["query_text"][0], levels)
    texts = dict(zip(frame["doc_id"].to_list(), frame["passage_text"].to_list(), strict=True))
    clash = sorted(set(texts) & set(batch_prompt().example_ids))
    if clash:  # the example's scores would then read as this passage's
        raise UsageError(f"passage id {clash[0]} of {collection_id} is an id of the batch prompt's example")
    return Pools(pools, texts)


def draw_trial(pool: TopicPool, trial: int, n_prologue: int, n_epilogue: int, seed: int) -> Draw:
    """The passages of one trial; the same arguments always give the same draw, on any machine."""
    topic_key = int.from_bytes(hashlib.sha256(pool.query_id.encode()).digest()[:8], "big")
    rng = np.random.default_rng(np.random.SeedSequence([seed, topic_key, trial, n_prologue, n_epilogue]))

    def pick(level: int, k: int) -> tuple[str, ...]:
        ids = sorted(pool.levels[level])
        return tuple(ids[i] for i in rng.choice(len(ids), size=k, replace=False))

    epilogue = pick(LEVELS["epilogue"], n_epilogue)
    high = pick(LEVELS["high"], n_prologue)
    low = pick(LEVELS["low"], n_prologue)
    return Draw(pool.query_id, trial, n_prologue, n_epilogue, epilogue, high, low)


@task(cache_policy=NO_CACHE)
def draw_trials(pools: Pools, trials: int, layouts: list[tuple[int, int]], seed: int) -> list[Draw]:
    """Every trial of every topic and setting (trials numbered from 1)."""
    if trials < 1:
        raise UsageError(f"trials must be at least 1, not {trials}")
    return [
        draw_trial(pool, trial, n_prologue, n_epilogue, seed)
        for pool in pools.topics.values()
        for n_prologue, n_epilogue in layouts
        for trial in range(1, trials + 1)
    ]


def plan_batches(draws: list[Draw], personalities: list[str]) -> list[BatchItem]:
    """Two batches (HT, LT) per draw and personality; a personality's batches go together (shared prefix)."""
    return [
        BatchItem(d.query_id, d.trial, d.n_prologue, d.n_epilogue, code, condition, d.batch(condition))
        for code in personalities
        for d in draws
        for condition in CONDITIONS
    ]


def planned_frame(items: list[BatchItem]) -> pl.DataFrame:
    """The planned batches as a frame (registered as priming_planned for the gate and the statistics)."""
    schema = {
        "query_id": pl.String(),
        "trial": pl.Int32(),
        "n_prologue": pl.Int32(),
        "n_epilogue": pl.Int32(),
        "personality": pl.String(),
        "condition": pl.String(),
        "doc_ids": pl.List(pl.String()),
    }
    return pl.DataFrame([{**asdict(i), "doc_ids": list(i.doc_ids)} for i in items], schema=schema)
