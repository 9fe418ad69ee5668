"""Whether a judge call has nothing to do: answered from the warehouse alone, before Prefect is imported.

Re-running a finished judge run is common (a script, a notebook, a user making sure); the flow would start Prefect
(~1.7 s of imports), a flow run against the API (~1.3 s and ~0.5 s to stop its heartbeat), open the warehouse a
dozen times, and end where it began. `settled` says what that flow would say, without writing anything, when it can
prove the flow would change nothing; otherwise None, and the command runs the flow. Proven means all of:
- the endpoint is a configured server (the embedded model is never started here) and the call asks online, without
  --retry-failed, in the answer format the run was made in (no probe to send);
- the run exists, is published (its last call passed the gate and no call is under way: a running or killed call
  leaves it 'running'), and asks as this call would (the engine's one claim rule, tasks/engine/runs.py, finds
  nothing that differs);
- the personalities are stored with the instructions this call would store;
- no shard of the run waits on disk (a killed call's answers, which the flow would load first);
- every planned item is judged on the current texts, and the gate passes on this call's plan, read-only.
"""

from __future__ import annotations

import json
from typing import Any

import duckdb

from peras.llm.constraints import DIALECTS, FREE
from peras.prompting import Personality
from peras.settings import Settings
from peras.sql import run_sql
from peras.warehouse import MEMORY_TIGHT, connect, publish_snapshot
from tasks.engine.endpoint import Endpoint, known_format
from tasks.engine.runs import answered_as, gate_params, gate_problems, stored_run
from tasks.engine.shards import shard_dir, shard_files
from tasks.engine.spec import RunIdentity
from tasks.engine.stage import declaration
from tasks.judge.asking import JudgePlan
from tasks.judge.runs import (
    count_failures,
    failure_shares,
    judge_claim,
    judge_config,
    judge_planned,
    judge_run_name,
    read_pairs,
)

PUBLISHED = "published"


def settled(
    settings: Settings,
    collection: str,
    subset: str | None,
    personalities: list[Personality],
    cot: list[bool],
    methods: list[str],
    run_name: str | None,
    limit_pairs: int | None,
    n_samples: int,
    backend: str | None,
) -> dict[str, Any] | None:
    """The flow's summary of a call with nothing to ask and nothing to change, or None (run the flow)."""
    if settings.mode != "online" or not settings.base_urls or not settings.model:
        return None
    endpoint = Endpoint(settings.base_urls, settings.model, backend or "openai-compatible")
    name = judge_run_name(run_name, collection, subset, None, endpoint.model)
    with connect(settings.warehouse, read_only=True) as con:
        row = run_sql(con, "judge/select_run", {"run_name": name}).fetchone()
        if row is None or row[5] != PUBLISHED:
            return None
        resumed = resumed_endpoint(settings, endpoint, json.loads(row[4]))
        if resumed is None:
            return None  # the flow would probe the server
        endpoint = resumed
        config = judge_config(endpoint, n_samples)
        claim = answered_as(judge_claim(name, collection, subset, config, methods), endpoint)
        run_id, differences = stored_run(con, claim, config.model)
        if run_id is None or differences:
            return None  # the flow says why: let it
        if not same_personalities(con, personalities):
            return None
        [(warehouse_id,)] = run_sql(con, "engine/select_warehouse_id").fetchall()
        identity = RunIdentity(str(warehouse_id), "judge", run_id, name, config.model, config.backend)
        if any(shard_files(shard_dir(settings.shards, identity)).values()):
            return None
        pairs = read_pairs(con, collection, subset, limit_pairs)
        plan = JudgePlan(run_id, pairs, [p.code for p in personalities], cot, methods)
        if plan.count(lambda sql, params: run_sql(con, sql, params).fetchall()):
            return None
        run_sql(con, MEMORY_TIGHT)  # as the flow's gate: its memory must not grow with the run
        try:
            if gate_problems(con, declaration("judge"), gate_params(settings, identity), judge_planned(plan, config)):
                return None  # the flow records the failed gate and says what failed
        except duckdb.OutOfMemoryException:
            return None  # the flow's gate tries again with more (peras.warehouse.bounded)
        shares = failure_shares(con, run_id)
    publish_snapshot(settings)  # as the flow ends: current already, unless an earlier refresh failed
    failures = count_failures(shares)
    counts = {"n_judged_now": 0, "n_sent": 0, "n_http": 0, "n_cached": 0, "n_dropped": 0}
    return {
        "run_name": name,
        "run_id": run_id,
        "model": endpoint.model,
        "backend": endpoint.backend,
        **counts,
        "n_planned": len(plan.pairs) * len(personalities) * len(cot) * len(methods),
        "n_failures": failures,
    }


def resumed_endpoint(settings: Settings, endpoint: Endpoint, stored: dict[str, Any]) -> Endpoint | None:
    """The endpoint in the answer format the call asks in by the engine's rule (known_format, as check_endpoint),
    from the format the stored run asked in; None when only a probe can tell."""
    asked = str(stored.get("answer_format", FREE))
    probe = known_format(settings.answer_format, asked if asked in (FREE, *DIALECTS) else None, False)
    if probe is None:
        return None
    return Endpoint(endpoint.base_urls, endpoint.model, endpoint.backend, probe.answer_format, probe.found)


def same_personalities(con: Any, personalities: list[Personality]) -> bool:
    """Whether every personality is stored as store_personalities would store it now."""
    stored = {row[0]: row[1:] for row in run_sql(con, "judge/select_personalities").fetchall()}
    return all(
        stored.get(p.code) == (p.name, p.trait, p.pole, p.instruction, "builtin" if p.is_builtin else str(p.source))
        for p in personalities
    )
