"""What the study's judge runs will ask, counted by running the judge's own plan and stage without sending.

For each judge run of the grid the judge's JudgePlan gives the items still to do (what the run has judged on the
current texts is skipped, as on a resume), and the judge's JudgeStage builds their requests (tasks/judge/dry_run.py,
handed over by flows/study.py), answered by a stand-in (tasks/shared/dry_run.py): a request the warehouse already
answered (any run, the engine's cache rule) is answered from there and not counted, and one this estimate already
counted for the preset is not counted twice (the engine sends an identical request once). Any other request is
counted, and its answer stands in as label 0 (labels are one digit: the confidence request built on it has the same
length as the real one).

`requests` is then what the endpoint receives when every answer reads at the first attempt (regenerations of
unreadable answers and HTTP retries come on top) and no two settings share a confidence request; the engine sends a
confidence request once for both CoT settings when a pair gets the same label in both, so `at least` counts those
once. Items journaled to shards that are not loaded yet (a run killed mid-way) are counted as to do.

Prompt tokens are estimated as the characters of the messages / 4 (CHARS_PER_TOKEN: the usual rule of thumb for
English with OpenAI's and Llama-3's tokenizers; no tokenizer is loaded). Cost = prompt tokens x input price +
assumed answer tokens (ANSWER_TOKENS) x output price, with the prices of peras/models.toml: the list price (online
mode) and, for providers with a Batch API, its batch price (`--mode batch`, docs/batch.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from peras.settings import Settings
from peras.sql import run_sql, run_statements
from peras.warehouse import connect
from tasks.engine.endpoint import Endpoint
from tasks.shared.dry_run import Asked, DryRun, StoredLookup, chunks, prompt_chars, simulate
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
    batch_price: tuple[float, float] | None = None  # the same through the provider's Batch API, if it has one

    @property
    def prompt_tokens(self) -> int:
        """Estimated prompt tokens of the requests counted."""
        return round(self.prompt_chars / CHARS_PER_TOKEN)

    @property
    def cost_usd(self) -> float | None:
        """Estimated USD, hosted presets only."""
        return self._cost(self.price)

    @property
    def batch_cost_usd(self) -> float | None:
        """Estimated USD in batch mode, hosted presets whose provider has a Batch API only."""
        return self._cost(self.batch_price)

    def _cost(self, price: tuple[float, float] | None) -> float | None:
        if price is None:
            return None
        return (self.prompt_tokens * price[0] + self.answer_tokens * price[1]) / 1e6


@dataclass
class Estimate:
    """The rows of the whole grid."""

    rows: list[EstimateRow] = field(default_factory=list)

    @property
    def n_requests(self) -> int:
        """Requests counted over the grid."""
        return sum(r.n_requests for r in self.rows)


# The judge's plan and stage of a run, without sending (tasks/judge/dry_run.py's judge_dry_run, handed over by
# flows/study.py): called with keywords settings, endpoint, run_name, collection, subset, personalities, cot,
# limit_pairs, methods.
JudgeDryRun = Callable[..., DryRun]


def estimate_tokens(messages: list[dict[str, str]]) -> float:
    """The estimated prompt tokens of one request (characters / 4)."""
    return prompt_chars(messages) / CHARS_PER_TOKEN


def estimate_judge_run(
    settings: Settings, run: JudgeRun, grid: StudyGrid, seen: set[str], dry_run: JudgeDryRun
) -> list[EstimateRow]:
    """The rows of one judge run (one per CoT setting); `seen`: the requests already counted for its preset."""
    endpoint = Endpoint(run.settings.base_urls, run.preset.model, run.preset.backend)
    judge = dry_run(
        settings=settings,
        endpoint=endpoint,
        run_name=run.run_name,
        collection=run.collection,
        subset=run.subset,
        personalities=grid.personalities,
        cot=run.cot,
        limit_pairs=grid.limit_pairs,
        methods=METHODS,
    )
    with connect(settings.warehouse, read_only=True) as con:

        def fetch(sql: str | list[str], params: dict[str, Any]) -> list[tuple[Any, ...]]:
            # as the engine's: a SQL file's name, or a declared stage's statements
            result = run_sql(con, sql, params) if isinstance(sql, str) else run_statements(con, sql, params)
            return list(result.fetchall())

        lookup = StoredLookup(con, judge.run_id)
        rows = {cot: _row(run, cot) for cot in run.cot}
        uncertain: set[str] = set()
        for chunk in chunks(judge.plan.items(fetch), CHUNK):
            for item, asked in zip(chunk, simulate(judge.stage, chunk, judge.model, lookup), strict=True):
                tally(rows[item.cot], item.cot, asked, lookup, seen, uncertain)
    return list(rows.values())


def _row(run: JudgeRun, cot: bool) -> EstimateRow:
    price = (run.preset.price.input, run.preset.price.output) if run.preset.price else None
    batch = run.preset.price.batch if run.preset.price else None
    return EstimateRow(run.preset.name, run.collection, run.subset, cot, price=price, batch_price=batch)


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
    header.append("batch USD")
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
            "-" if r.batch_cost_usd is None else f"{r.batch_cost_usd:,.2f}",
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
    batch = [(r.cost_usd or 0.0, r.batch_cost_usd) for r in estimate.rows if r.batch_cost_usd is not None]
    cached = sum(r.n_cached for r in estimate.rows)
    lines.append(
        f"total: {estimate.n_requests:,} requests (at least {sum(r.n_requests_min for r in estimate.rows):,}), "
        f"{sum(r.prompt_tokens for r in estimate.rows):,} prompt tokens (characters / {CHARS_PER_TOKEN}), "
        f"{cached:,} answered from the warehouse"
        + (f", est. USD {sum(costs):,.2f} for hosted models (prices to be checked)" if costs else "")
        + (
            f"; in batch mode (--mode batch) the {sum(c for c, _ in batch):,.2f} of models with a Batch API cost"
            f" {sum(b for _, b in batch):,.2f}"
            if batch
            else ""
        )
    )
    return lines
