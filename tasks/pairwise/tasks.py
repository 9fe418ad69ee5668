"""Pairwise tasks: load the judged passages, draw the pairs, and the recipe the one flow body asks them with.

Pairs are drawn in tasks/pairwise/draws.py and asked as tasks/pairwise/asking.py says; the measures are views
(sql/pairwise/views/) read by tasks/pairwise/tables.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl
from prefect import task
from prefect.cache_policies import NO_CACHE

from peras.errors import UsageError
from peras.prompting import Personality, load_prompt
from peras.settings import Settings
from peras.sql import run_sql
from peras.warehouse import open_migrated, require_collection
from tasks.engine.endpoint import Endpoint
from tasks.engine.run_status import notice
from tasks.engine.running import HeldItems, StageOutcome
from tasks.engine.runs import Gate, RunClaim
from tasks.engine.spec import RunIdentity
from tasks.engine.stage import declaration
from tasks.engine.tasks import run_counts
from tasks.pairwise.asking import PROMPTS, PairItem, PairwiseConfig, PairwiseStage
from tasks.pairwise.draws import Judged, PairDraw, draw_pairs
from tasks.pairwise.prompt import prompt_file

ALL = "all"  # every prompt the endpoint supports
LOGPROBS = "logp"  # the prompt whose confidence comes from the endpoint's log-probabilities


@dataclass(frozen=True)
class Collection:
    """The judged passages a run draws from, and the texts its requests show."""

    judged: list[Judged]
    queries: dict[str, str]
    texts: dict[str, str]


@task(cache_policy=NO_CACHE)
def load_judged(settings: Settings, collection_id: str, subset_name: str | None) -> Collection:
    """The judged passages of a collection or subset with their grades and texts."""
    params = {"collection_id": collection_id, "subset_name": subset_name}
    with open_migrated(settings.warehouse) as con:
        require_collection(con, collection_id, subset_name)
        rows = run_sql(con, "pairwise/select_judged", params).fetchall()
    return Collection(
        [Judged(q, d, int(r)) for q, d, r, _, _ in rows],
        {q: qt for q, _, _, qt, _ in rows},
        {d: pt for _, d, _, _, pt in rows},
    )


def draw(collection: Collection, seed: int, pairs_per_topic: int) -> list[PairDraw]:
    """The run's pairs (tasks/pairwise/draws.py)."""
    return draw_pairs(seed, collection.judged, pairs_per_topic)


def check_prompts(prompts: list[str] | None) -> list[str]:
    """The prompts to ask, in a fixed order; none given means 'certainty', 'all' every prompt (those the endpoint
    supports: PairwiseRecipe.fit)."""
    chosen = prompts or ["certainty"]
    unknown = [p for p in chosen if p not in PROMPTS and p != ALL]
    if unknown:
        raise UsageError(f"unknown pairwise prompt {', '.join(unknown)}; known: {', '.join(PROMPTS)}, {ALL}")
    return [p for p in PROMPTS if p in chosen or ALL in chosen]


def named_prompts(prompts: list[str] | None) -> tuple[str, ...]:
    """The prompts the call names itself, not through 'all': the endpoint must support them."""
    return tuple(p for p in PROMPTS if p in (prompts or ["certainty"]))


def pairwise_config(endpoint: Endpoint) -> PairwiseConfig:
    """Remote models get the prompts' sampling alone; the embedded model also an answer cap (recorded)."""
    if endpoint.is_embedded:
        cap = declaration("pairwise").token_cap(endpoint.backend, embedded=True)
        return PairwiseConfig(endpoint.model, endpoint.backend, cap, {"cache_prompt": True})
    return PairwiseConfig(endpoint.model, endpoint.backend)


def run_parameters(config: PairwiseConfig) -> dict[str, Any]:
    """What fixes a run besides collection, model and seed: every prompt's request parameters and file text, and
    how many answers MP samples."""
    return {
        "request_params": {prompt: config.params(prompt) for prompt in PROMPTS},
        "prompt_templates": {prompt: load_prompt(prompt_file(name)).template for prompt, name in PROMPTS.items()},
        "mp_samples": config.mp_samples,
    }


@dataclass
class PairwiseRecipe(HeldItems):
    """Pairwise's part of the one flow body (tasks/engine/running.py): its run, its stage, its planned items."""

    collection_id: str
    subset_name: str | None
    seed: int
    scope: dict[str, Any]
    run_name: str | None
    personalities: list[Personality]
    collection: Collection
    planned: list[PairItem]
    named: tuple[str, ...] = ()  # the prompts the call named itself (not through 'all')
    gate: Gate = Gate("run not published (its answers are kept for inspection)")

    def configure(self, endpoint: Endpoint) -> PairwiseConfig:
        """Remote models get the prompts' sampling alone; the embedded model also an answer cap (recorded)."""
        return pairwise_config(endpoint)

    def claim(self, config: PairwiseConfig) -> RunClaim:
        """A run is fixed by its collection, subset, model, seed and every prompt's parameters."""
        parts = {"collection": self.collection_id, "subset": self.subset_name, "model": config.model}
        name = self.run_name or declaration("pairwise").default_run_name(**parts)
        values = {"collection_id": self.collection_id, "subset_name": self.subset_name, "seed": self.seed}
        return RunClaim(declaration("pairwise"), name, values | {"scope": self.scope}, run_parameters(config))

    def stage(self, config: PairwiseConfig) -> PairwiseStage:
        """Items to requests, answers to answer rows."""
        personalities = {p.code: p for p in self.personalities}
        return PairwiseStage(config, personalities, self.collection.queries, self.collection.texts)

    def planned_frame(self) -> pl.DataFrame:
        """The planned items as rows, for the gate."""
        return planned_frame(self.planned)

    def prepare(self, settings: Settings, run: RunIdentity) -> None:
        """Nothing is stored before asking."""

    def wants_logprobs(self) -> bool:
        """logp's confidence is read from the log-probabilities."""
        return LOGPROBS in self.scope["prompts"]

    def fit(self, endpoint: Endpoint) -> None:
        """An endpoint without log-probabilities cannot answer logp: named, the call is refused in one line (before
        anything but the probe is sent); brought by 'all', it is left out of the run, said once."""
        if endpoint.logprobs is not False or not self.wants_logprobs():
            return
        if LOGPROBS in self.named:
            raise UsageError(
                "pairwise --prompt logp: the endpoint returns no log-probabilities (the probe asked for them); ask"
                " the other prompts, or --prompt all for every prompt it supports"
            )
        notice("pairwise: logp left out: the endpoint returns no log-probabilities")
        self.planned = [item for item in self.planned if item.prompt != LOGPROBS]
        self.scope = self.scope | {"prompts": [p for p in self.scope["prompts"] if p != LOGPROBS]}


def planned_frame(planned: list[PairItem]) -> pl.DataFrame:
    """The planned items as rows, for the gate."""
    return pl.DataFrame(
        [
            {
                "query_id": i.pair.query_id,
                "doc_1": i.pair.doc_1,
                "doc_2": i.pair.doc_2,
                "relevance_1": i.pair.relevance_1,
                "relevance_2": i.pair.relevance_2,
                "personality": i.personality,
                "prompt": i.prompt,
                "position": i.position,
            }
            for i in planned
        ],
        schema={c: pl.Utf8 for c in ("query_id", "doc_1", "doc_2")}
        | {"relevance_1": pl.Int32, "relevance_2": pl.Int32}
        | {c: pl.Utf8 for c in ("personality", "prompt", "position")},
    )


def summarize(outcome: StageOutcome[PairwiseConfig], scope: dict[str, Any], n_planned: int) -> dict[str, Any]:
    """Counts for the CLI and the artifact."""
    counts = run_counts(outcome.run, outcome.endpoint, outcome.stats)
    return counts | scope | {"n_planned": n_planned, "n_failures": outcome.n_failures}
