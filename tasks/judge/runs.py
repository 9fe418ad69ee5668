"""What a judge run is, without Prefect: its name, its parameters, what it plans and what its gate compares.

The judge tasks (tasks/judge/tasks.py) and the check that a run has nothing left to ask (tasks/judge/settled.py,
run by `peras judge` before Prefect is imported) share these.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from peras.errors import UsageError
from peras.sql import query_rows, run_sql
from tasks.engine.endpoint import Endpoint
from tasks.engine.runs import RunClaim
from tasks.engine.stage import declaration
from tasks.judge.asking import METHODS, JudgeConfig, JudgePlan, Pair, Pairs

# The 0.5B model answers a label or a confidence in 1-3 tokens; a 'self' JSON or a 'certainty' answer needs room.
EMBEDDED_MAX_TOKENS = {"label": 4, "cot": 24, "confidence": 6, "joint": 96}


def check_methods(methods: list[str] | None) -> list[str]:
    """Confidence methods must be known; none given means verbalized, 'all' means every method."""
    chosen = methods or ["verbalized"]
    if "all" in chosen:
        chosen = list(METHODS)
    unknown = [m for m in chosen if m not in METHODS]
    if unknown:
        raise UsageError(f"unknown confidence method {unknown[0]!r}; choose from {', '.join(METHODS)}")
    return chosen


def judge_config(endpoint: Endpoint, n_samples: int) -> JudgeConfig:
    """Remote models get the study's defaults; the embedded model gets short answer caps (recorded)."""
    if endpoint.is_embedded:
        return JudgeConfig(
            endpoint.model,
            endpoint.backend,
            EMBEDDED_MAX_TOKENS["label"],
            EMBEDDED_MAX_TOKENS["cot"],
            EMBEDDED_MAX_TOKENS["confidence"],
            n_samples,
            max_tokens_joint=EMBEDDED_MAX_TOKENS["joint"],
            extra_body={"cache_prompt": True},
            answer_format=endpoint.answer_format,
        )
    return JudgeConfig(endpoint.model, endpoint.backend, n_samples=n_samples, answer_format=endpoint.answer_format)


def run_parameters(config: JudgeConfig, methods: list[str]) -> dict[str, Any]:
    """What defines a run (stored in judge_runs.params; never credentials): the requests as the engine sends them.
    The answer format, the probe's finding and its requests are added by the engine's claim (answered_as), as for
    every stage."""
    return {
        "model": config.model,
        "confidence_methods": methods,
        "label_params_nocot": config.label_sent(False, methods[0]),
        "label_params_cot": config.label_sent(True, methods[0]),
        "confidence_params": config.confidence_sent(),
        "n_samples": config.n_samples,
        "sampling_temperature": config.sampling_temperature,
        "top_logprobs": config.top_logprobs,
        "certainty_threshold": config.certainty_threshold,
    }


def judge_run_name(
    run_name: str | None, collection_id: str, subset_name: str | None, pool: str | None, model: str
) -> str:
    """The run's name: as given, else <collection>-<subset or 'runs' for a pool>-<model>."""
    parts = {"collection": collection_id, "subset": subset_name or ("runs" if pool else None), "model": model}
    return run_name or declaration("judge").default_run_name(**parts)


def judge_claim(
    name: str, collection_id: str, subset_name: str | None, config: JudgeConfig, methods: list[str]
) -> RunClaim:
    """What fixes a judge run, for the engine's one claim rule (tasks/engine/runs.py): its collection, model and
    request parameters. The subset it was made for is recorded, not compared: pairs, limits, subsets, personalities
    and CoT settings only narrow or extend what a run has judged."""
    values = {"collection_id": collection_id, "subset_name": subset_name, "source": "llm", "task_type": "pointwise"}
    return RunClaim(declaration("judge"), name, values, run_parameters(config, methods))


def judge_planned(plan: JudgePlan, config: JudgeConfig) -> dict[str, pa.Table]:
    """The tables the judge's gate_items reads (sql/judge/gate_items.sql): planned_pairs (query_id, doc_id, text_sha)
    and planned_settings (personality, cot, method, the label request's parameters) of a plan."""
    planned_pairs = pa.table(
        {
            "query_id": pa.array([q for q, _ in plan.pairs], pa.string()),
            "doc_id": pa.array([d for _, d in plan.pairs], pa.string()),
            "text_sha": pa.array([p.text_sha for p in plan.pairs.values()], pa.string()),
        }
    )
    settings_rows = [
        {
            "personality": personality,
            "cot": cot,
            "confidence_method": method,
            # the label request a judgment points to: sampling's first vote (seed 0)
            "label_params": json.dumps(
                config.label_sent(cot, method) | ({"seed": 0} if method == "sampling" else {}), separators=(",", ":")
            ),
        }
        for personality, cot, method in plan.groups()
    ]
    planned_settings = pa.Table.from_pylist(
        settings_rows,
        schema=pa.schema(
            [("personality", pa.string()), ("cot", pa.bool_()), ("confidence_method", pa.string()),
             ("label_params", pa.string())]
        ),
    )  # fmt: skip
    return {"planned_pairs": planned_pairs, "planned_settings": planned_settings}


def read_pairs(
    con: Any, collection_id: str, subset_name: str | None, limit: int | None, pool: str | None = None
) -> Pairs:
    """The judged pairs of a collection or subset with their texts, the first `limit` (0 or None: all), in the order
    they are judged: {(query_id, doc_id): Pair}; with `pool`, the pairs of that judge-run pool instead."""
    first = {"limit_pairs": limit or None}
    if pool is None:
        params = {"collection_id": collection_id, "subset_name": subset_name} | first
        rows = run_sql(con, "judge/select_pairs", params).fetchall()
    else:
        params = {"collection_id": collection_id, "pool_id": pool} | first
        rows = run_sql(con, "judge_run/select_pool_pairs", params).fetchall()
    return {(q, d): Pair(qt, pt, sha) for q, d, qt, pt, sha in rows}


def failure_shares(con: Any, run_id: str) -> list[dict[str, Any]]:
    """Parse failures per personality, CoT setting and method over the whole run, a dict per group (the summary's
    table: sql/judge/select_failure_shares.sql)."""
    return query_rows(con, "judge/select_failure_shares", {"run_id": run_id})


def count_failures(shares: list[dict[str, Any]]) -> int:
    """The run's parse failures, from its `failure_shares`."""
    return sum(int(share["n_failures"]) for share in shares)
