"""A stage's run as the engine keeps it: claimed by name, then gated over everything it holds.

Every LLM stage keeps its runs in its own tables, named by its declaration (tasks/engine/stage.py); the SQL that
reaches them is rendered from the templates of `sql/engine/stage/`. The logic around them is here, once: a stage
builds a `RunClaim` and a planned frame, never the loops.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeAlias

import duckdb
import pyarrow as pa

from peras.errors import CheckFailed, UsageError
from peras.lake import in_lake, is_lake
from peras.llm.constraints import DIALECTS, FREE
from peras.settings import Settings
from peras.sql import run_sql, run_statements
from peras.warehouse import now, open_migrated, retrying, retrying_bounded, transaction
from peras.warehouse_views import apply_views_needing
from tasks.engine.endpoint import Endpoint, Probed
from tasks.engine.lease import check_lease, take_lease
from tasks.engine.own_stages import check_own_tables
from tasks.engine.shards import mend_request_copies
from tasks.engine.spec import RunIdentity
from tasks.engine.stage import Column, StageDeclaration, declaration

if TYPE_CHECKING:
    import polars as pl

    # A planned table the gate registers: a Polars DataFrame, or an Arrow table (the judge's: no Polars import).
    PlannedTable: TypeAlias = pl.DataFrame | pa.Table

# Recorded in a run's parameters, never a reason to refuse it: what the probe found, the requests it sent.
NOT_COMPARED = ("answer_probe", "probe_requests", "returns_logprobs")
# What a call that probes a run that exists adds to its record (start_run): a later call reuses it, sending nothing.
PROBE_FINDINGS = ("returns_logprobs",)
# On a lake, a gate that finds problems mends request copies another process's load left and looks again, this often.
MEND_ATTEMPTS = 3
RUN_STORED_TWICE = "run stored twice"  # sql/engine/stage/assert_one_run.sql's problem


@dataclass(frozen=True)
class RunClaim:
    """What a stage's run is fixed by, to create it or to find that an existing run of that name asks the same way.

    stage: the declaration (its `fixed` columns are compared, its `run_columns` recorded again on every call).
    name: the run's name. values: a value for each of the declaration's fixed and run columns (model and backend
    come from the endpoint); a json column's value is stored as JSON. params: the request parameters and prompt
    fingerprints, compared as JSON.
    """

    stage: StageDeclaration
    name: str
    values: dict[str, Any]
    params: dict[str, Any]


def answered_as(claim: RunClaim, endpoint: Endpoint) -> RunClaim:
    """The claim with the run's answer format (the constraint dialect), what the probe found and the requests it sent
    in its parameters: a constrained and a free run ask differently (tasks/engine/runs.py compares the first, records
    the others; the requests count against the run's --request-budget, resumes included)."""
    found = {
        "answer_format": endpoint.answer_format,
        "answer_probe": endpoint.answer_probe,
        "probe_requests": endpoint.probe_requests,
    }
    if endpoint.logprobs is not None:  # asked: a resume reuses it
        found["returns_logprobs"] = endpoint.logprobs
    return replace(claim, params=claim.params | found)


def stored_probe(settings: Settings, stage: StageDeclaration, name: str) -> Probed:
    """What the run of that name records of its probes: the answer format it asked in ('free' for a run older than
    formats; None for a new run, or one that asked in no one format: a fanned-out judge run, whose parts each probe
    their own host), whether its endpoint returned log-probabilities (None: never asked), and, under a
    --request-budget, what it has spent (the probe of a call resuming it counts on from there)."""
    with open_migrated(settings.warehouse) as con:
        check_own_tables(con, stage)  # a stage of your own whose columns changed: one line, not a BinderException
        try:
            found = run_params(con, stage, name)
        except duckdb.CatalogException:
            return Probed()  # the stage's tables do not exist yet: no run of it
        if found is None:
            return Probed()
        run_id, params = found
        spent = run_spent(con, run_id, params) if settings.request_budget is not None else 0
    stored = str(params.get("answer_format", FREE))
    logprobs = params.get("returns_logprobs")
    logprobs = logprobs if isinstance(logprobs, bool) else None
    return Probed(stored if stored in (FREE, *DIALECTS) else None, spent, logprobs)


def run_params(con: duckdb.DuckDBPyConnection, stage: StageDeclaration, name: str) -> tuple[str, dict[str, Any]] | None:
    """The id and the recorded parameters of the stage's run of that name (None: there is none)."""
    found = run_statements(con, stage.sql("select_run"), {"run_name": name}).fetchall()
    return (str(found[0][0]), json.loads(found[0][-1])) if found else None


def run_spent(con: duckdb.DuckDBPyConnection, run_id: str, params: dict[str, Any]) -> int:
    """What a run has spent of its --request-budget: the HTTP requests of its answers (resumes and replaced failures
    included) and those of the probes of the calls that claimed it (recorded in its parameters: `probe_requests`)."""
    asked = int(run_sql(con, "engine/select_http_requests", {"run_id": run_id}).fetchone()[0])
    return asked + probe_requests(params)


def probe_requests(params: dict[str, Any]) -> int:
    """The probes' requests a run's parameters record (0 for a run older than the record)."""
    return int(params.get("probe_requests", 0))


def run_probe_requests(con: duckdb.DuckDBPyConnection, identity: RunIdentity) -> int:
    """The probes' requests the run records (batch mode adds them to its lines: tasks/engine/batch_store.py)."""
    found = run_params(con, declaration(identity.kind), identity.run_name)
    return probe_requests(found[1]) if found else 0


def claim_run(
    settings: Settings, warehouse_id: str, claim: RunClaim, model: str, backend: str, lease: bool = True
) -> RunIdentity:
    """Create the run, or check that an existing run of that name asks the same way (then resume or extend it).

    The one rule for every stage: same fixed values and same request parameters, or refused with the difference
    named (`stored_run`). The stage's tables are created from its declaration if they do not exist yet (a stage of
    your own's that exist with other columns are refused: `check_own_tables`), and with them the views that name
    them in a `-- needs:` line (`sql/<stage>/views/`). With `lease`, the run's lease is taken
    in the same write (tasks/engine/lease.py): a run another live process is asking is refused; the caller holds the
    lease while it asks (`lease.held`) and so drops it.
    """
    stage = claim.stage

    def record() -> tuple[str, bool]:
        with open_migrated(settings.warehouse) as con:
            run_statements(con, stage.sql("create_tables"))
            check_own_tables(con, stage)
            apply_views_needing(con, stage.tables)  # the stage's views wait for its tables (`-- needs:`)
            with transaction(con):  # the run and its lease commit together: a claim read back sees both or neither
                return write_claim(con, claim, model, backend, lease)

    run_id, created = retrying(record)  # a DuckLake commit may meet another run's
    if lease and is_lake(settings.warehouse):  # two claims may have committed at once there
        check_lease(settings.warehouse, stage, claim.name, run_id, created)
    return RunIdentity(warehouse_id, stage.kind, run_id, claim.name, model, backend)


def write_claim(
    con: duckdb.DuckDBPyConnection, claim: RunClaim, model: str, backend: str, lease: bool
) -> tuple[str, bool]:
    """The claim's write (`claim_run`): the run created or started again, with its lease; its id, and whether this
    write created it."""
    stage = claim.stage
    found, differences = stored_run(con, claim, model)
    if differences:
        raise refusal(claim, differences)
    run_id = found or uuid.uuid4().hex[:16]
    row = _bound(claim, model) | {
        "run_id": run_id,
        "run_name": claim.name,
        "model": model,
        "backend": backend,
        "params": json.dumps(claim.params, sort_keys=True),
        # a resumed run adds this call's probe to its record
        "probe_requests": probe_requests(claim.params),
        "probe_found": json.dumps({k: claim.params[k] for k in PROBE_FINDINGS if k in claim.params}),
        "created_at": now(),
    }
    if lease:
        take_lease(con, stage.kind, stage.label, claim.name, str(run_id))
    run_statements(con, stage.sql("start_run" if found else "insert_run"), row)
    return str(run_id), found is None


def stored_run(con: duckdb.DuckDBPyConnection, claim: RunClaim, model: str) -> tuple[str | None, list[str]]:
    """The id of the stored run of the claim's name (None: there is none) and what differs between it and the claim
    asked of `model` (empty: it asks the same way). Reads only: the judge's dry run and its no-op check ask it too."""
    found = run_statements(con, claim.stage.sql("select_run"), {"run_name": claim.name}).fetchall()
    if not found:
        return None, []
    run_id, *have, have_params = found[0]
    asked = json.loads(json.dumps(claim.params, sort_keys=True))  # as it would be stored: tuples are lists
    return str(run_id), _differences(claim.stage, tuple(have), _bound(claim, model), json.loads(have_params), asked)


def refusal(claim: RunClaim, differences: list[str]) -> UsageError:
    """The one refusal of a run name that asks another way: what differs, then what to do."""
    stage = claim.stage
    return UsageError(
        f"{'; '.join(differences)}: {stage.label} {claim.name!r} already exists with another {stage.differs}; "
        "choose another --run-name"
    )


def _bound(claim: RunClaim, model: str) -> dict[str, Any]:
    """The claim's values of the run table's columns (fixed, run and created), as their columns store them."""
    stage = claim.stage
    values = {**claim.values, "model": model}
    named = (*stage.fixed, *stage.run_columns, *stage.created)
    missing = [c.name for c in named if c.name not in values]
    if missing:
        raise ValueError(f"{stage.kind} run claim lacks {missing}")
    return {c.name: _stored(c, values[c.name]) for c in named}


def _stored(column: Column, value: Any) -> Any:
    """A value as its column stores it (json columns hold JSON text)."""
    return json.dumps(value) if column.type == "json" and not isinstance(value, str) else value


def _differences(
    stage: StageDeclaration, have: tuple[Any, ...], want: dict[str, Any], have_params: Any, want_params: Any
) -> list[str]:
    """What differs between a stored run and this call: each fixed column, then the request parameters (a run stored
    before answer formats existed asked free text; what the probe said is a record, not compared)."""
    have_params = {"answer_format": "free"} | {k: v for k, v in have_params.items() if k not in NOT_COMPARED}
    want_params = {"answer_format": "free"} | {k: v for k, v in want_params.items() if k not in NOT_COMPARED}
    want_params = recorded_part(want_params, have_params)
    found = [
        f"{column.name} differs (stored {old!r}, asked {want[column.name]!r})"
        for column, old in zip(stage.fixed, have, strict=True)
        if old != want[column.name]
    ]
    if have_params != want_params:
        keys = sorted(
            key for key in set(have_params) | set(want_params) if have_params.get(key) != want_params.get(key)
        )
        found.append(f"request parameters differ ({', '.join(keys)})")
    return found


def recorded_part(want: dict[str, Any], have: dict[str, Any]) -> dict[str, Any]:
    """What a stored run can be compared on: a parameter it does not record was added to the stage after it was made
    (pairwise's logp and mp prompts), so it never asked that way and nothing of it can differ. Nested tables (a value
    per prompt) likewise, key by key."""
    kept: dict[str, Any] = {}
    for key, value in want.items():
        if key not in have:
            continue
        old = have[key]
        kept[key] = (
            {k: v for k, v in value.items() if k in old} if isinstance(value, dict) and isinstance(old, dict) else value
        )
    return kept


@dataclass(frozen=True)
class Gate:
    """How a stage's gate speaks: what stays unpublished, and whether it publishes the run when it passes."""

    withheld: str
    publish: bool = True


def gate_run(settings: Settings, run: RunIdentity, planned: Mapping[str, PlannedTable], gate: Gate) -> int:
    """The stage's gate over everything the run holds; published if it passes (when the stage publishes here).

    `planned`: the tables the stage's gate_items reads, by name (every stage's one `planned_items`; judge's planned
    pairs and settings, whose product it never holds). Runs under the warehouse's memory cap (a judge run is millions
    of judgments), again under a larger one if that is too small (peras.warehouse.bounded). Raises CheckFailed listing
    the problems (the run is then marked 'failed_check' by `recorded_run`). Returns the number of planned items
    recorded as failures.
    """
    stage = declaration(run.kind)
    params = gate_params(settings, run)

    def check(limits: str) -> tuple[list[tuple[str, str, int]], int]:
        with open_migrated(settings.warehouse) as con:
            run_sql(con, limits)
            problems = gate_problems(con, stage, params, planned)
            for _ in range(MEND_ATTEMPTS if problems and in_lake(con) else 0):
                # A lake has no keys: another process's load may just have committed a copy of a request this run
                # holds, and not yet brought the copies back to one (each load does, after its commit). Mended as a
                # load mends them, the run is looked at again; what is still wrong is the run's.
                retrying(lambda: mend_request_copies(con, run))
                problems = gate_problems(con, stage, params, planned)
                if not problems:
                    break
            [(n_failures,)] = run_sql(con, "engine/count_gate_failures").fetchall()
            withhold_copies(con, stage, run, problems)
            if not problems and gate.publish:
                status = {"run_id": run.run_id, "status": "published", "status_reason": None, "finished_at": now()}
                run_statements(con, stage.sql("set_run_status"), status)
        return problems, int(n_failures)

    problems, n_failures = retrying_bounded(check)  # a DuckLake status update may meet another run's
    if problems:
        lines = "\n".join(f"  [{problem}] {detail}" for problem, detail, _ in problems[:20])
        more = f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else ""
        raise CheckFailed(f"{run.kind} gate failed; {gate.withheld}:\n{lines}{more}")
    return int(n_failures)


def withhold_copies(
    con: duckdb.DuckDBPyConnection, stage: StageDeclaration, run: RunIdentity, problems: list[tuple[str, str, int]]
) -> None:
    """A run whose name is stored as several runs holding answers (`assert_one_run`): the other copies are withheld
    with it (marked 'failed_check' with the gate's reason), so that no copy of a doubled run stays published."""
    found = [detail for problem, detail, _ in problems if problem == RUN_STORED_TWICE]
    if found:
        reason = f"CheckFailed: {stage.kind} gate failed: [{RUN_STORED_TWICE}] {found[0]}"[:500]
        values = {"run_id": run.run_id, "status_reason": reason, "finished_at": now()}
        run_statements(con, stage.sql("withhold_copies"), values)


def gate_params(settings: Settings, run: RunIdentity) -> dict[str, Any]:
    """What a stage's gate SQL may bind: the run, its model, the failure threshold, how items are named."""
    stage = declaration(run.kind)
    return {
        "run_id": run.run_id,
        "model": run.model,
        "max_share": settings.max_parse_failure_share,
        "items": stage.items,
    }


def gate_problems(
    con: duckdb.DuckDBPyConnection, stage: StageDeclaration, params: dict[str, Any], planned: Mapping[str, PlannedTable]
) -> list[tuple[str, str, int]]:
    """The gate's problems, read only (temporary tables aside): the declaration's `gate_items` joins the planned
    tables with every stored outcome of the run; `assert_run_complete` finds planned items without an outcome and
    failure groups over the threshold (over the whole run: a narrower call cannot publish a run whose other items
    failed), `assert_no_copies` an item stored twice, `assert_one_run` the run's name stored as more than one run
    holding answers (a run asked twice at once by older code), and the stage's declared checks its own problems.
    Sorted by rank (completeness first, failure shares last), then problem and detail. The judge's check that a call
    has nothing to do asks it too (tasks/judge/settled.py)."""
    for name, frame in planned.items():
        con.register(name, frame if isinstance(frame, pa.Table) else frame.to_arrow())
    run_statements(con, stage.sql("gate_items"), params)
    complete = run_statements(con, stage.sql("assert_run_complete"), params).fetchall()
    copies = run_statements(con, stage.sql("assert_no_copies"), params).fetchall()
    copies += run_statements(con, stage.sql("assert_one_run"), params).fetchall()
    own = [row for check in stage.check_sql() for row in run_statements(con, check, params).fetchall()]
    found = [(str(p), str(d), int(r)) for p, d, r in complete] + [(str(p), str(d), 1) for p, d in copies + own]
    return sorted(found, key=lambda problem: (problem[2], problem[0], problem[1]))
