"""Priming tasks: register the run, hand the planned batches to the engine, gate.

The trials are drawn in tasks/priming/draws.py, asked as tasks/priming/asking.py says, and the statistics are
computed in tasks/priming/stats.py.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from peras.errors import CheckFailed, UsageError
from peras.prompting import DEFAULT_CODE, Personality
from peras.settings import Settings
from peras.sql import run_sql
from peras.warehouse import now, open_migrated
from tasks.engine.endpoint import Endpoint
from tasks.engine.spec import RunIdentity
from tasks.engine.tasks import run_counts
from tasks.priming.asking import BatchConfig, BatchItem, PrimingPlan, PrimingStage
from tasks.priming.draws import Pools, planned_frame
from tasks.priming.prompt import batch_prompt

EMBEDDED_MAX_TOKENS = 256  # a JSON object of 16 ids and scores is about 130 tokens


def personality_codes(personalities: list[str] | None) -> list[str] | None:
    """The codes to select: none given means the default condition only, 'all' means every one (None)."""
    if not personalities:
        return [DEFAULT_CODE]
    return None if "all" in personalities else personalities


def default_run_name(collection: str, model: str) -> str:
    """e.g. dl19-priming-qwen2.5-coder-0.5b-instruct-q4_k_m."""
    return f"{collection}-priming-{model.replace('/', '_')}"


def batch_config(endpoint: Endpoint, frequency_penalty: float | None, presence_penalty: float | None) -> BatchConfig:
    """Remote models get the prompt's sampling alone; the embedded model also an answer cap (recorded)."""
    sampling = batch_prompt().sampling
    if endpoint.is_embedded:
        return BatchConfig(
            endpoint.model,
            endpoint.backend,
            sampling,
            EMBEDDED_MAX_TOKENS,
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
    name = run_name or default_run_name(collection_id, config.model)
    params = json.dumps(run_parameters(config), sort_keys=True)
    with open_migrated(settings.warehouse) as con:
        found = run_sql(con, "priming/select_run", {"run_name": name}).fetchall()
        row = found[0] if found else None
        if row is not None:
            run_id, have_collection, have_model, have_seed, have_params = row
            if (have_collection, have_model, have_seed) != (collection_id, config.model, seed) or json.loads(
                have_params
            ) != json.loads(params):
                raise UsageError(
                    f"priming run {name!r} already exists with another collection, model, seed, prompt or "
                    "request parameters; choose another --run-name"
                )
        else:
            run_id = uuid.uuid4().hex[:16]
        values = {
            "priming_run_id": run_id,
            "run_name": name,
            "collection_id": collection_id,
            "model": config.model,
            "backend": config.backend,
            "seed": seed,
            "params": params,
            "scope": json.dumps(scope),
            "created_at": now(),
        }
        run_sql(con, "priming/insert_run" if row is None else "priming/start_run", values)
    return RunIdentity(warehouse_id, "priming", run_id, name, config.model, config.backend)


def plan_priming(run: RunIdentity, planned: list[BatchItem]) -> PrimingPlan:
    """The planned batches; those with a stored outcome are skipped when asked."""
    return PrimingPlan(run.run_id, planned)


def priming_stage(config: BatchConfig, personalities: list[Personality], pools: Pools) -> PrimingStage:
    """Priming's half of the engine contract: batches to requests, answers to batch outcomes."""
    queries = {query_id: pool.query for query_id, pool in pools.topics.items()}
    return PrimingStage(config, {p.code: p for p in personalities}, queries, pools.texts)


@task(cache_policy=NO_CACHE)
def check_priming_run(settings: Settings, run: RunIdentity, planned: list[BatchItem]) -> int:
    """The priming gate (sql/priming/assert_run_valid.sql); on failure the statistics stay unpublished.

    Returns the number of planned batches recorded as failures (under the threshold when it returns).
    """
    with open_migrated(settings.warehouse) as con:
        con.register("priming_planned", planned_frame(planned).to_arrow())
        problems = run_sql(
            con,
            "priming/assert_run_valid",
            {"priming_run_id": run.run_id, "max_share": settings.max_parse_failure_share},
        ).fetchall()
        [(n_failures,)] = run_sql(con, "priming/count_failures", {"priming_run_id": run.run_id}).fetchall()
        if problems:
            reason = f"{len(problems)} problem(s): {problems[0][0]}"
            params = {"run_id": run.run_id, "status": "failed_check", "status_reason": reason, "finished_at": now()}
            run_sql(con, "priming/set_run_status", params)
    if problems:
        lines = "\n".join(f"  [{problem}] {detail}" for problem, detail in problems[:20])
        raise CheckFailed(
            f"priming gate failed; statistics not published (the batches are kept for inspection):\n{lines}"
        )
    return int(n_failures)


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
