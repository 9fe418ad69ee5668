"""Priming tasks: the recipe the one flow body asks the planned batches with, and the summary.

The trials are drawn in tasks/priming/draws.py, asked as tasks/priming/asking.py says, and the statistics are
computed in tasks/priming/stats.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from peras.prompting import DEFAULT_CODE, Personality
from peras.settings import Settings
from tasks.engine.endpoint import Endpoint
from tasks.engine.running import HeldItems, StageOutcome
from tasks.engine.runs import Gate, RunClaim
from tasks.engine.spec import RunIdentity
from tasks.engine.stage import declaration
from tasks.engine.tasks import run_counts
from tasks.priming.asking import BatchConfig, BatchItem, PrimingStage
from tasks.priming.draws import Pools, planned_frame
from tasks.priming.prompt import batch_prompt


def personality_codes(personalities: list[str] | None) -> list[str] | None:
    """The codes to select: none given means the default condition only, 'all' means every one (None)."""
    if not personalities:
        return [DEFAULT_CODE]
    return None if "all" in personalities else personalities


def batch_config(endpoint: Endpoint, frequency_penalty: float | None, presence_penalty: float | None) -> BatchConfig:
    """Remote models get the prompt's sampling alone; the embedded model also an answer cap (recorded)."""
    sampling = batch_prompt().sampling
    if endpoint.is_embedded:
        return BatchConfig(
            endpoint.model,
            endpoint.backend,
            sampling,
            declaration("priming").token_cap(endpoint.backend, embedded=True),
            frequency_penalty,
            presence_penalty,
            extra_body={"cache_prompt": True},
        )
    return BatchConfig(endpoint.model, endpoint.backend, sampling, None, frequency_penalty, presence_penalty)


def run_parameters(config: BatchConfig) -> dict[str, Any]:
    """What fixes a run besides collection, model and seed: the request parameters and the prompt file."""
    return {"request_params": config.params(), "prompt_sha256": batch_prompt().fingerprint}


@dataclass
class PrimingRecipe(HeldItems):
    """Priming's part of the one flow body (tasks/engine/running.py); its gate publishes nothing: the statistics
    are published after it passes."""

    collection_id: str
    seed: int
    scope: dict[str, Any]
    run_name: str | None
    frequency_penalty: float | None
    presence_penalty: float | None
    personalities: list[Personality]
    pools: Pools
    planned: list[BatchItem]
    gate: Gate = Gate("statistics not published (the batches are kept for inspection)", publish=False)

    def configure(self, endpoint: Endpoint) -> BatchConfig:
        """The prompt's sampling and the penalties; the embedded model also an answer cap (recorded)."""
        return batch_config(endpoint, self.frequency_penalty, self.presence_penalty)

    def claim(self, config: BatchConfig) -> RunClaim:
        """A run is fixed by its collection, model, seed, prompt and request parameters."""
        stage = declaration("priming")
        name = self.run_name or stage.default_run_name(collection=self.collection_id, model=config.model)
        values = {"collection_id": self.collection_id, "seed": self.seed, "scope": self.scope}
        return RunClaim(declaration("priming"), name, values, run_parameters(config))

    def stage(self, config: BatchConfig) -> PrimingStage:
        """Batches to requests, answers to batch outcomes."""
        queries = {query_id: pool.query for query_id, pool in self.pools.topics.items()}
        return PrimingStage(config, {p.code: p for p in self.personalities}, queries, self.pools.texts)

    def planned_frame(self) -> pl.DataFrame:
        """The planned batches as rows, for the gate."""
        return planned_frame(self.planned)

    def prepare(self, settings: Settings, run: RunIdentity) -> None:
        """Nothing is stored before asking."""


def summarize(
    outcome: StageOutcome[BatchConfig], scope: dict[str, Any], n_batches: int, tables: Any, plots: list[str]
) -> dict[str, Any]:
    """Counts and tables for the CLI and the artifact."""
    n_failures = outcome.n_failures
    return run_counts(outcome.run, outcome.endpoint, outcome.stats) | {
        "n_topics": len(scope["topics"]),
        **scope,
        "n_batches": n_batches,
        "n_failures": n_failures,
        "analysis": tables.analysis,
        "pooled": tables.personalities,
        "index": tables.index,
        "plots": plots,
    }
