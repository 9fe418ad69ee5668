"""What the study's judge runs will ask, counted by running the judge's own plan and stage without sending.

For each judge run of the grid the judge's JudgePlan gives the items still to do (what the run has judged on the
current texts is skipped, as on a resume), and the judge's JudgeStage builds their requests, answered here by a
stand-in: a request the warehouse already answered (any run, the engine's cache rule) is answered from there and
not counted, and one this estimate already counted for the preset is not counted twice (the engine sends an
identical request once). Any other request is counted, and its answer stands in as label 0 (labels are one
digit: the confidence request built on it has the same length as the real one).

`requests` is then what the endpoint receives when every answer reads at the first attempt (regenerations of
unreadable answers and HTTP retries come on top) and no two settings share a confidence request; the engine sends a
confidence request once for both CoT settings when a pair gets the same label in both, so `at least` counts those
once. Items journaled to shards that are not loaded yet (a run killed mid-way) are counted as to do.

Prompt tokens are estimated as the characters of the messages / 4 (CHARS_PER_TOKEN: the usual rule of thumb for
English with OpenAI's and Llama-3's tokenizers; no tokenizer is loaded). Cost = prompt tokens x input price +
assumed answer tokens (ANSWER_TOKENS) x output price, with the prices of peras/models.toml.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from peras.errors import RequestRejected
from peras.prompting import request_hashes, select_personalities
from peras.settings import Settings
from peras.sql import run_sql
from peras.warehouse import connect
from tasks.engine.endpoint import Endpoint
from tasks.engine.spec import Answer, Ask, ParsedValue
from tasks.judge.tasks import check_same_run, judge_config, judge_stage, load_pairs, plan_judgments, run_parameters
from tasks.study.grid import JudgeRun, StudyGrid

CHARS_PER_TOKEN = 4
# Answer lengths assumed for the cost (tokens per request): a bare label, a label after reasoning, a confidence.
ANSWER_TOKENS = {("label", False): 2, ("label", True): 150, ("confidence", False): 3, ("confidence", True): 3}
CHUNK = 2048  # items simulated together: their requests are looked up in the warehouse in one query
METHODS = ["verbalized"]  # the study's confidence method


@dataclass
class EstimateRow:
    """One preset x collection x CoT setting."""

    preset: str
    collection: str
    subset: str
    cot: bool
    n_items: int = 0
    n_requests: int = 0
    n_requests_min: int = 0
    n_cached: int = 0
    prompt_chars: int = 0
    answer_tokens: int = 0
    price: tuple[float, float] | None = None  # USD per 1M input, output tokens (hosted presets)

    @property
    def prompt_tokens(self) -> int:
        """Estimated prompt tokens of the requests counted."""
        return round(self.prompt_chars / CHARS_PER_TOKEN)

    @property
    def cost_usd(self) -> float | None:
        """Estimated USD, hosted presets only."""
        if self.price is None:
            return None
        return (self.prompt_tokens * self.price[0] + self.answer_tokens * self.price[1]) / 1e6


@dataclass
class Estimate:
    """The rows of the whole grid."""

    rows: list[EstimateRow] = field(default_factory=list)

    @property
    def n_requests(self) -> int:
        """Requests counted over the grid."""
        return sum(r.n_requests for r in self.rows)


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


def estimate_tokens(messages: list[dict[str, str]]) -> float:
    """The estimated prompt tokens of one request (characters / 4)."""
    return prompt_chars(messages) / CHARS_PER_TOKEN


def estimate_judge_run(settings: Settings, run: JudgeRun, grid: StudyGrid, seen: set[str]) -> list[EstimateRow]:
    """The rows of one judge run (one per CoT setting); `seen`: the requests already counted for its preset."""
    endpoint = Endpoint(run.settings.base_urls, run.preset.model, run.preset.backend)
    config = judge_config(endpoint, n_samples=10)
    personalities = select_personalities(grid.personalities, settings.personalities_dir)
    pairs = load_pairs(settings, run.collection, run.subset, grid.limit_pairs)
    with connect(settings.warehouse, read_only=True) as con:
        run_id = existing_run_id(con, run, config)

        def fetch(name: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
            return list(run_sql(con, name, params).fetchall())

        plan = plan_judgments_for(run_id, run, pairs, personalities)
        stage = judge_stage(config, personalities, pairs)
        lookup = StoredLookup(con, run_id)
        rows = {cot: _row(run, cot) for cot in run.cot}
        uncertain: set[str] = set()
        for chunk in chunks(plan.items(fetch), CHUNK):
            for item, asked in zip(chunk, simulate(stage, chunk, config.model, lookup), strict=True):
                tally(rows[item.cot], item.cot, asked, lookup, seen, uncertain)
    return list(rows.values())


def existing_run_id(con: Any, run: JudgeRun, config: Any) -> str | None:
    """The id of the run of that name, checked to ask the same way (the judge flow would refuse it later)."""
    row = run_sql(con, "judge/select_run", {"run_name": run.run_name}).fetchone()
    if row is None:
        return None
    run_id, have_collection, _, have_model, have_params, _ = row
    want = run_parameters(config, METHODS)
    check_same_run(run.run_name, run.collection, have_collection, {"model": have_model} | json.loads(have_params), want)
    return str(run_id)


def plan_judgments_for(run_id: str | None, run: JudgeRun, pairs: Any, personalities: Any) -> Any:
    """The judge's plan of the run (a new run: nothing done, under an id no row has)."""
    from tasks.engine.spec import RunIdentity

    identity = RunIdentity("", "judge", run_id or uuid.uuid4().hex, run.run_name, run.preset.model, "")
    return plan_judgments(identity, pairs, personalities, run.cot, METHODS)


def _row(run: JudgeRun, cot: bool) -> EstimateRow:
    price = (run.preset.price.input, run.preset.price.output) if run.preset.price else None
    return EstimateRow(run.preset.name, run.collection, run.subset, cot, price=price)


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


def tally(
    row: EstimateRow, cot: bool, asked: list[Asked], lookup: StoredLookup, seen: set[str], uncertain: set[str]
) -> None:
    """Count one item's requests into its row (see the module docstring for what is counted)."""
    row.n_items += 1
    for a in asked:
        if a.known and lookup.usable(a.request_id) is not None:
            row.n_cached += 1
            continue
        if a.known and a.request_id in seen:
            continue
        if a.known:
            seen.add(a.request_id)
            row.n_requests_min += 1
        elif a.request_id not in uncertain:  # built on a stand-in label 0: shared when both settings say 0
            uncertain.add(a.request_id)
            row.n_requests_min += 1
        row.n_requests += 1
        row.prompt_chars += a.chars
        row.answer_tokens += ANSWER_TOKENS.get((a.purpose, cot), 0)


def format_estimate(estimate: Estimate) -> list[str]:
    """The plan as text lines: one per preset x collection x CoT setting, then the totals."""
    header = ["model", "collection", "subset", "CoT", "items", "requests", "at least", "prompt tokens", "est. USD"]
    body = [
        [
            r.preset,
            r.collection,
            r.subset,
            "with" if r.cot else "without",
            f"{r.n_items:,}",
            f"{r.n_requests:,}",
            f"{r.n_requests_min:,}",
            f"{r.prompt_tokens:,}",
            "-" if r.cost_usd is None else f"{r.cost_usd:,.2f}",
        ]
        for r in estimate.rows
    ]
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]
    lines = [
        "  ".join(
            cell.ljust(w) if i < 4 else cell.rjust(w) for i, (cell, w) in enumerate(zip(line, widths, strict=True))
        )
        for line in [header, *body]
    ]
    costs = [r.cost_usd for r in estimate.rows if r.cost_usd is not None]
    cached = sum(r.n_cached for r in estimate.rows)
    lines.append(
        f"total: {estimate.n_requests:,} requests (at least {sum(r.n_requests_min for r in estimate.rows):,}), "
        f"{sum(r.prompt_tokens for r in estimate.rows):,} prompt tokens (characters / {CHARS_PER_TOKEN}), "
        f"{cached:,} answered from the warehouse"
        + (f", est. USD {sum(costs):,.2f} for hosted models (prices to be checked)" if costs else "")
    )
    return lines
