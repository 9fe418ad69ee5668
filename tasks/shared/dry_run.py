"""A run's plan and stage, run without sending: which requests each item asks, and which of them the warehouse answers.

A request the warehouse already answered is looked up with the engine's query and reused by the engine's rule
(any answer that reads; a failure only for the run that stored it). Any other request is answered by a stand-in
(label 0; labels are one digit, so what is built on it has the length of the real request), and every request built
on a stand-in is marked not known. Known requests are looked up until no new one appears.

The study's estimate (tasks/study/estimate.py) counts what this returns; the stage whose run is estimated gives its
DryRun (tasks/judge/dry_run.py), handed over by the flow (flows/study.py): a stage imports no other stage.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import polars as pl

from peras.errors import RequestRejected
from peras.prompting import request_hashes
from peras.sql import run_sql
from tasks.engine.spec import Answer, Ask, ParsedValue, Plan, Stage


@dataclass(frozen=True)
class DryRun:
    """A run as it would ask: its id (None: no run of that name yet), its model, its plan of what is left, its stage."""

    run_id: str | None
    model: str
    plan: Plan
    stage: Stage


@dataclass
class Asked:
    """One request the stage asked for: its id, size, and whether its content is known (not built on a stand-in)."""

    request_id: str
    chars: int
    purpose: str
    known: bool


def prompt_chars(messages: list[dict[str, str]]) -> int:
    """What the token estimate counts: the characters of every message's content."""
    return sum(len(str(m.get("content", ""))) for m in messages)


def chunks(items: Iterator[Any], size: int) -> Iterator[list[Any]]:
    """Lists of at most `size` items."""
    chunk: list[Any] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


class StoredLookup:
    """Stored answers by request id, fetched on demand with the engine's query; its rule for reusing them."""

    def __init__(self, con: Any, run_id: str | None) -> None:
        self.con, self.run_id = con, run_id
        self.answers: dict[str, tuple[str | None, str, str | None, str | None]] = {}
        self.looked_up: set[str] = set()

    def fetch(self, request_ids: set[str]) -> None:
        """Look the ids up (once each)."""
        wanted = sorted(request_ids - self.looked_up)
        if not wanted:
            return
        self.con.register("wanted_requests", pl.DataFrame({"request_id": wanted}).to_arrow())
        for request_id, raw_text, _, status, reason, run_id in run_sql(
            self.con, "engine/select_stored_answers"
        ).fetchall():
            self.answers[request_id] = (raw_text, status, reason, run_id)
        self.con.unregister("wanted_requests")
        self.looked_up.update(wanted)

    def usable(self, request_id: str) -> tuple[str | None, str, str | None, str | None] | None:
        """The stored answer the engine would reuse: any that reads, a failure only for the run that stored it."""
        stored = self.answers.get(request_id)
        if stored is None or (stored[1] != "ok" and stored[3] != self.run_id):
            return None
        return stored


def simulate(stage: Any, items: list[Any], model: str, lookup: StoredLookup) -> list[list[Asked]]:
    """The requests each item asks, its known requests looked up until no new one appears (at most 3 rounds)."""
    with ThreadPoolExecutor(max_workers=1) as pool:  # a loop of its own, whatever runs in this thread
        while True:
            asked = pool.submit(asyncio.run, _simulate_all(stage, items, model, lookup)).result()
            new = {a.request_id for per_item in asked for a in per_item if a.known} - lookup.looked_up
            if not new:
                return asked
            lookup.fetch(new)


async def _simulate_all(stage: Any, items: list[Any], model: str, lookup: StoredLookup) -> list[list[Asked]]:
    return list(await asyncio.gather(*(_simulate(stage, item, model, lookup) for item in items)))


async def _simulate(stage: Any, item: Any, model: str, lookup: StoredLookup) -> list[Asked]:
    asked: list[Asked] = []
    stand_in = [False]  # an answer of this item was a stand-in: what is built on it is not known

    async def ask(spec: Ask) -> Answer:
        request_id = request_hashes(model, spec.messages, spec.params, spec.sample_index)[0]
        known = not stand_in[0]
        asked.append(Asked(request_id, prompt_chars(spec.messages), spec.purpose, known))
        stored = lookup.usable(request_id) if known else None
        if stored is not None:
            raw_text, status, reason, _ = stored
            if status == "refused":
                raise RequestRejected(reason or "refused", request_id=request_id)
            return Answer(request_id, spec.parse(raw_text or ""), raw_text or "", None, True)
        await asyncio.sleep(0)  # samples asked together are all asked before any stand-in is given
        stand_in[0] = True
        return Answer(request_id, ParsedValue(0, True, ""), "0", None, False)

    try:
        await stage.handle(item, ask)
    except Exception:
        if not asked:  # a stand-in can make a stage fail after its requests; a failure before any is a bug
            raise
    return asked
