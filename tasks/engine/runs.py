"""A stage's run as the engine keeps it: claimed by name, then gated over what the call planned.

Every LLM stage keeps its runs in its own table (`<kind>_runs` and friends), reached through the same five SQL files
in `sql/<kind>/`: `select_run`, `insert_run`, `start_run` (claiming), `gate_items` and `assert_run_valid` (the gate).
The logic around them is here, once: a stage builds a `RunClaim` and a planned frame, never the loops.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from peras.errors import CheckFailed, UsageError
from peras.paths import SQL_DIR
from peras.settings import Settings
from peras.sql import run_sql
from peras.warehouse import now, open_migrated, retrying
from tasks.engine.spec import RunIdentity


@dataclass(frozen=True)
class RunClaim:
    """What a stage's run is fixed by, to create it or to find that an existing run of that name asks the same way.

    kind: the stage (`sql/<kind>/select_run.sql` returns the id, then `fixed`'s columns in order, then `params`).
    fixed: the values an existing run must have (collection, model, seed...); params: the request parameters and
    prompt fingerprints, compared as JSON. row: every other value `insert_run`/`start_run` bind (model, backend,
    scope...). what: the words of the refusal, e.g. "collection, model, seed, prompt or request parameters".
    """

    kind: str
    label: str
    name: str
    fixed: tuple[Any, ...]
    params: dict[str, Any]
    row: dict[str, Any] = field(default_factory=dict)
    what: str = "settings"


def claim_run(settings: Settings, warehouse_id: str, claim: RunClaim, model: str, backend: str) -> RunIdentity:
    """Create the run, or check that an existing run of that name asks the same way (then resume/extend it)."""
    params = json.dumps(claim.params, sort_keys=True)

    def record() -> str:
        with open_migrated(settings.warehouse) as con:
            found = run_sql(con, f"{claim.kind}/select_run", {"run_name": claim.name}).fetchall()
            if found:
                run_id, *have, have_params = found[0]
                if tuple(have) != tuple(claim.fixed) or json.loads(have_params) != json.loads(params):
                    raise UsageError(
                        f"{claim.label} {claim.name!r} already exists with another {claim.what}; "
                        "choose another --run-name"
                    )
            else:
                run_id = uuid.uuid4().hex[:16]
            values = claim.row | {
                "run_id": run_id,
                "run_name": claim.name,
                "model": model,
                "backend": backend,
                "params": params,
                "created_at": now(),
            }
            run_sql(con, f"{claim.kind}/start_run" if found else f"{claim.kind}/insert_run", values)
        return str(run_id)

    run_id = retrying(record)  # a DuckLake commit may meet another run's
    return RunIdentity(warehouse_id, claim.kind, run_id, claim.name, model, backend)


@dataclass(frozen=True)
class Gate:
    """How a stage's gate speaks: `items` ("batches", "answers"), what stays unpublished, what is kept."""

    items: str
    withheld: str
    publish: bool = True


def gate_run(settings: Settings, run: RunIdentity, planned: pl.DataFrame, gate: Gate) -> int:
    """The stage's gate over the items this call planned; published if it passes (when the stage publishes here).

    `sql/<kind>/gate_items.sql` joins the planned items (registered as `planned_items`) with the stored outcomes into
    `gate_items` (item_name, failure_group, status, and the stage's own columns); `sql/engine/assert_run_complete.sql`
    finds planned items without an outcome and failure groups over the threshold, `sql/<kind>/assert_run_valid.sql`
    (if the stage has one) its own problems. Raises CheckFailed listing them (the run is then marked 'failed_check' by
    `recorded_run`). Returns the number of planned items recorded as failures.
    """
    params = {"run_id": run.run_id, "max_share": settings.max_parse_failure_share, "items": gate.items}

    def check() -> tuple[list[Any], int]:
        with open_migrated(settings.warehouse) as con:
            con.register("planned_items", planned.to_arrow())
            run_sql(con, f"{run.kind}/gate_items", params)
            complete = run_sql(con, "engine/assert_run_complete", params).fetchall()
            own = [(problem, detail, 1) for problem, detail in own_problems(con, run.kind, params)]
            problems = sorted(complete + own, key=lambda p: p[2])  # missing, the stage's own, failure shares
            [(n_failures,)] = run_sql(con, "engine/count_gate_failures").fetchall()
            if not problems and gate.publish:
                status = {"run_id": run.run_id, "status": "published", "status_reason": None, "finished_at": now()}
                run_sql(con, f"{run.kind}/set_run_status", status)
        return problems, int(n_failures)

    problems, n_failures = retrying(check)
    if problems:
        lines = "\n".join(f"  [{problem}] {detail}" for problem, detail, _ in problems[:20])
        raise CheckFailed(f"{run.kind} gate failed; {gate.withheld}:\n{lines}")
    return int(n_failures)


def own_problems(con: Any, kind: str, params: dict[str, Any]) -> list[tuple[str, str]]:
    """The stage's own gate checks (`sql/<kind>/assert_run_valid.sql`), if it has any beyond the engine's."""
    if not (SQL_DIR / kind / "assert_run_valid.sql").is_file():
        return []
    return [
        (str(problem), str(detail)) for problem, detail in run_sql(con, f"{kind}/assert_run_valid", params).fetchall()
    ]
