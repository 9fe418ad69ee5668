"""Priming tasks: register the run, hand the planned batches to the engine, gate.

The trials are drawn in tasks/priming/draws.py, asked as tasks/priming/asking.py says, and the statistics are
computed in tasks/priming/stats.py.
"""

from __future__ import annotations

from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from peras.prompting import DEFAULT_CODE, Personality
from peras.settings import Settings
from tasks.engine.endpoint import Endpoint
from tasks.engine.runs import Gate, RunClaim, claim_run, gate_run
from tasks.engine.spec import RunIdentity, default_run_name
from tasks.engine.stages import HeldPlan
from tasks.engine.tasks import run_counts
from tasks.priming.asking import BatchConfig, BatchItem, PrimingStage
from tasks.priming.draws import Pools, planned_frame
from tasks.priming.prompt import batch_prompt
from tasks.priming.stage import PRIMING


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
            PRIMING.token_cap(endpoint.backend, embedded=True),
            frequency_penalty,
            presence_penalty,
            extra_body={"cache_prompt": True},
        )
    return BatchConfig(endpoint.model, endpoint.backend, sampling, None, frequency_penalty, presence_penalty)


def run_parameters(config: BatchConfig) -> dict[str, Any]:
    """What fixes a run besides collection, model and seed: the request parameters and the prompt file."""
    return {"request_params": config.params(), "prompt_sha256": batch_prompt().fingerprint}


@task(cache_policy=NO_CACHE)
def register_priming_run(
    settings: Settings,
    warehouse_id: str,
    run_name: str | None,
    collection_id: str,
    config: BatchConfig,
    seed: int,
    scope: dict[str, Any],
) -> RunIdentity:
    """Create the run, or check that an existing run of that name asks the same way (then extend it)."""
    name = run_name or default_run_name("priming", config.model, collection_id)
    values = {"collection_id": collection_id, "seed": seed, "scope": scope}
    claim = RunClaim(PRIMING, name, values, run_parameters(config))
    return claim_run(settings, warehouse_id, claim, config.model, config.backend)


def plan_priming(run: RunIdentity, planned: list[BatchItem]) -> HeldPlan[BatchItem]:
    """The planned batches; those with a stored outcome are skipped when asked."""
    return HeldPlan("priming", run.run_id, planned)


def priming_stage(config: BatchConfig, personalities: list[Personality], pools: Pools) -> PrimingStage:
    """Priming's half of the engine contract: batches to requests, answers to batch outcomes."""
    queries = {query_id: pool.query for query_id, pool in pools.topics.items()}
    return PrimingStage(config, {p.code: p for p in personalities}, queries, pools.texts)


@task(cache_policy=NO_CACHE)
def check_priming_run(settings: Settings, run: RunIdentity, planned: list[BatchItem]) -> int:
    """The priming gate (the engine's, with sql/priming/assert_run_valid.sql); on failure the statistics stay
    unpublished.

    Returns the number of planned batches recorded as failures (under the threshold when it returns).
    """
    gate = Gate("statistics not published (the batches are kept for inspection)", publish=False)
    return gate_run(settings, run, planned_frame(planned), gate)


def summarize(
    run: RunIdentity,
    endpoint: Endpoint,
    scope: dict[str, Any],
    n_batches: int,
    n_failures: int,
    stats: dict[str, Any],
    tables: Any,
    plots: list[str],
) -> dict[str, Any]:
    """Counts and tables for the CLI and the artifact."""
    return run_counts(run, endpoint, stats) | {
        "n_topics": len(scope["topics"]),
        **scope,
        "n_batches": n_batches,
        "n_failures": n_failures,
        "analysis": tables.analysis,
        "pooled": tables.personalities,
        "index": tables.index,
        "plots": plots,
    }
