"""Pairwise tasks: load the judged passages, draw the pairs, register the run, hand the items to the engine, gate.

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
from tasks.engine.runs import Gate, RunClaim, claim_run, gate_run
from tasks.engine.spec import RunIdentity, default_run_name
from tasks.engine.stages import HeldPlan
from tasks.engine.tasks import run_counts
from tasks.pairwise.asking import PROMPTS, PairItem, PairwiseConfig, PairwiseStage
from tasks.pairwise.draws import Judged, PairDraw, draw_pairs
from tasks.pairwise.stage import PAIRWISE


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
    """The prompts to ask, in a fixed order; none given means 'certainty'."""
    chosen = prompts or ["certainty"]
    unknown = [p for p in chosen if p not in PROMPTS]
    if unknown:
        raise UsageError(f"unknown pairwise prompt {', '.join(unknown)}; known: {', '.join(PROMPTS)}")
    return [p for p in PROMPTS if p in chosen]


def pairwise_config(endpoint: Endpoint) -> PairwiseConfig:
    """Remote models get the prompts' sampling alone; the embedded model also an answer cap (recorded)."""
    if endpoint.is_embedded:
        cap = PAIRWISE.token_cap(endpoint.backend, embedded=True)
        return PairwiseConfig(endpoint.model, endpoint.backend, cap, {"cache_prompt": True})
    return PairwiseConfig(endpoint.model, endpoint.backend)


def run_parameters(config: PairwiseConfig) -> dict[str, Any]:
    """What fixes a run besides collection, model and seed: every prompt's request parameters and file text."""
    return {
        "request_params": {prompt: config.params(prompt) for prompt in PROMPTS},
        "prompt_templates": {prompt: load_prompt(name).template for prompt, name in PROMPTS.items()},
    }


@task(cache_policy=NO_CACHE)
def register_pairwise_run(
    settings: Settings,
    warehouse_id: str,
    run_name: str | None,
    collection_id: str,
    subset_name: str | None,
    config: PairwiseConfig,
    seed: int,
    scope: dict[str, Any],
) -> RunIdentity:
    """Create the run, or check that an existing run of that name asks the same way (then extend it)."""
    name = run_name or default_run_name("pairwise", config.model, collection_id, subset_name)
    values = {"collection_id": collection_id, "subset_name": subset_name, "seed": seed, "scope": scope}
    claim = RunClaim(PAIRWISE, name, values, run_parameters(config))
    return claim_run(settings, warehouse_id, claim, config.model, config.backend)


def plan_pairwise(run: RunIdentity, planned: list[PairItem]) -> HeldPlan[PairItem]:
    """The planned items; those with a stored answer are skipped when asked."""
    return HeldPlan("pairwise", run.run_id, planned)


def pairwise_stage(config: PairwiseConfig, personalities: list[Personality], collection: Collection) -> PairwiseStage:
    """Pairwise's half of the engine contract: items to requests, answers to answer rows."""
    return PairwiseStage(config, {p.code: p for p in personalities}, collection.queries, collection.texts)


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


@task(cache_policy=NO_CACHE)
def check_pairwise_run(settings: Settings, run: RunIdentity, planned: list[PairItem]) -> int:
    """The pairwise gate (the engine's, with sql/pairwise/assert_run_valid.sql): published if it passes.

    Returns the number of planned answers recorded as failures (under the threshold when it returns).
    """
    gate = Gate("run not published (its answers are kept for inspection)")
    return gate_run(settings, run, planned_frame(planned), gate)


def summarize(
    run: RunIdentity, endpoint: Endpoint, scope: dict[str, Any], n_planned: int, n_failures: int, stats: dict[str, Any]
) -> dict[str, Any]:
    """Counts for the CLI and the artifact."""
    return run_counts(run, endpoint, stats) | scope | {"n_planned": n_planned, "n_failures": n_failures}
