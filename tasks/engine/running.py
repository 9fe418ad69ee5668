"""The one flow body of an LLM stage: serve the endpoint, claim the run, ask, gate, in that order, written once.

A stage's flow plans its items (its own steps), hands them with a `StageRecipe` to `run_stage`, then does what is
its own afterwards (statistics, tables, the summary). The recipe holds what differs between stages: how requests
are sent to this endpoint (`configure`), what fixes the run (`claim`), the stage object that asks (`stage`), its
plan (`plan`: held whole, `HeldItems`, or streamed: judge's millions) and the planned tables the gate reads
(`planned_tables`). Every LLM stage's flow runs it, judge's included.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from prefect import task
from prefect.cache_policies import NO_CACHE

from peras.prompting import Personality
from peras.settings import Settings
from peras.warehouse import kept_open
from tasks.engine.endpoint import Endpoint, serving_endpoint
from tasks.engine.lease import held
from tasks.engine.run_status import recorded_run
from tasks.engine.runs import Gate, RunClaim, answered_as, claim_run, gate_run, stored_probe
from tasks.engine.spec import Plan, RunIdentity, Stage
from tasks.engine.stage import declaration
from tasks.engine.stages import HeldPlan, declared_frame
from tasks.engine.tasks import (
    ask_all,
    check_endpoint,
    identify_warehouse,
    opaque,
    run_counts,
    store_personalities,
)

if TYPE_CHECKING:
    import polars as pl

    from tasks.engine.runs import PlannedTable

ConfigT = TypeVar("ConfigT")


class StageRecipe(Protocol[ConfigT]):
    """What a stage hands the one flow body: everything that differs between stages, nothing that does not."""

    @property
    def gate(self) -> Gate:
        """How the gate speaks, and whether it publishes the run."""
        ...

    @property
    def personalities(self) -> Sequence[Personality]:
        """The personalities asked under, recorded with their instruction text before asking."""
        ...

    def configure(self, endpoint: Endpoint) -> ConfigT:
        """How requests are sent to this endpoint (sampling, caps; recorded in the run's parameters)."""
        ...

    def claim(self, config: ConfigT) -> RunClaim:
        """What fixes the run: its declaration, name, fixed values and request parameters."""
        ...

    def stage(self, config: ConfigT) -> Stage:
        """The stage object that turns an item into requests and the answers into one outcome row."""
        ...

    def plan(self, run: RunIdentity) -> Plan:
        """The run's planned items without a stored outcome, as the engine reads them (`HeldPlan`, `JudgePlan`)."""
        ...

    def planned_tables(self, plan: Any, config: ConfigT) -> dict[str, PlannedTable]:
        """The tables the stage's gate_items reads, by name (`planned_items`: keys and what the plan fixes)."""
        ...

    def prepare(self, settings: Settings, run: RunIdentity) -> None:
        """Anything the stage stores with the run before asking (fuse: its votes); usually nothing."""
        ...

    def wants_logprobs(self) -> bool:
        """Whether the run asks for log-probabilities: the endpoint's probe then asks whether it returns them."""
        ...

    def fit(self, endpoint: Endpoint) -> None:
        """What the run asks, fitted to what the checked endpoint answers (pairwise leaves logp out where there are no
        log-probabilities, or refuses it in one line), before the run is claimed; usually nothing."""
        ...


class HeldItems:
    """A recipe's plan held whole (every stage but judge: thousands of items, not millions): its `planned` items,
    minus those with a stored outcome, and for the gate one table `planned_items` (`planned_frame`)."""

    planned: Sequence[Any]

    def plan(self, run: RunIdentity) -> Plan:
        """The planned items without a stored outcome, in plan order."""
        return HeldPlan(run.kind, run.run_id, list(self.planned))

    def planned_tables(self, plan: Any, config: Any) -> dict[str, PlannedTable]:
        """The planned items as rows, as the engine's gate_items template reads them."""
        frame = self.planned_frame()
        return {"planned_items": declared_frame(declaration(plan.kind), self.planned) if frame is None else frame}

    def planned_frame(self) -> pl.DataFrame | None:
        """The planned items as rows (keys and what the plan fixes); None: the declaration's keys and planned columns,
        read from each item's attributes of those names (`declared_frame`)."""
        return None

    def wants_logprobs(self) -> bool:
        """No log-probabilities asked (pairwise's logp asks them)."""
        return False

    def fit(self, endpoint: Endpoint) -> None:
        """Every endpoint answers what the stage asks: nothing to fit."""


@dataclass
class StageOutcome(Generic[ConfigT]):
    """What the body did: the run, the endpoint it asked, how, the engine's counts and the gate's failures."""

    run: RunIdentity
    endpoint: Endpoint
    config: ConfigT
    stats: dict[str, Any]
    n_failures: int

    @property
    def n_waiting(self) -> int:
        """Batch mode: the items whose answers are still out (the run is 'waiting', not gated yet); online: 0."""
        return int(self.stats.get("n_waiting", 0))

    def waiting(self, n_planned: int) -> dict[str, Any]:
        """What a batch-mode call that ends with items waiting returns: the run's counts, what it submitted now, and
        whether its rounds are files for vLLM's run-batch (`offline`)."""
        return run_counts(self.run, self.endpoint, self.stats) | {
            "n_planned": n_planned,
            "n_waiting": self.n_waiting,
            "batches": self.stats["batches"],
            "offline": not self.endpoint.base_urls,
            "budget_line": self.stats.get("budget_line"),
        }


@task(cache_policy=NO_CACHE)
def claim_stage_run(settings: Settings, warehouse_id: str, claim: RunClaim, endpoint: Endpoint) -> RunIdentity:
    """Create the run, or check that an existing run of that name asks the same way (then resume or extend it)."""
    return claim_run(settings, warehouse_id, claim, endpoint.model, endpoint.backend)


@task(cache_policy=NO_CACHE)
def gate_stage_run(settings: Settings, run: RunIdentity, planned: dict[str, PlannedTable], gate: Gate) -> int:
    """The stage's gate over everything the run holds; published if it passes (when the stage publishes here).

    Returns the number of planned items recorded as failures (under the threshold when it returns).
    """
    return gate_run(settings, run, planned, gate)


def checked_endpoint(settings: Settings, recipe: StageRecipe[ConfigT], endpoint: Endpoint) -> tuple[Endpoint, ConfigT]:
    """The endpoint checked in the answer format a resumed run asked in (the run's name comes from the recipe's claim)
    and, for a recipe that wants them, for log-probabilities; the recipe fitted to it, and its configuration for it:
    what `run_stage` and a fanned-out run's parts ask with."""
    named = recipe.claim(recipe.configure(endpoint))
    stored = stored_probe(settings, named.stage, named.name)
    # A recipe of a stage of one's own written before these two hooks existed has neither: it asks no
    # log-probabilities and fits every endpoint.
    wants_logprobs = getattr(recipe, "wants_logprobs", None)
    endpoint = check_endpoint(settings, endpoint, stored, bool(wants_logprobs and wants_logprobs()))
    fit = getattr(recipe, "fit", None)
    if fit is not None:
        fit(endpoint)
    return endpoint, recipe.configure(endpoint)


def run_stage(
    settings: Settings,
    recipe: StageRecipe[ConfigT],
    backend: str | None,
    chunk_size: int,
    retry_failed: bool = False,
) -> StageOutcome[ConfigT]:
    """Serve the endpoint, check it, claim the run, ask every planned item without a stored answer, gate.

    The endpoint is checked with the answer format a resumed run asked in (its name comes from the recipe's claim),
    then the recipe configures the requests for the checked endpoint. With settings.mode 'batch' the asking is batch
    rounds (docs/batch.md): a call collects what ended, answers what came back, submits the next round, and returns
    with the run 'waiting' (`StageOutcome.n_waiting`, no gate) until a call finds nothing waiting; that call gates
    (settings.batch_wait: poll until then). The run is 'running' while it asks and 'failed' (with the reason) or
    'failed_check' if anything here fails.
    """
    with serving_endpoint(settings, backend) as endpoint:
        endpoint, config = checked_endpoint(settings, recipe, endpoint)
        claim = answered_as(recipe.claim(config), endpoint)
        # The claim and what is stored before asking run back to back, and so do the gate and the lease's release:
        # each group attaches the warehouse file once (kept_open), which is not held while the run asks.
        with ExitStack() as kept:
            kept.enter_context(kept_open(settings.warehouse))
            warehouse_id = identify_warehouse(settings)
            run = claim_stage_run(settings, warehouse_id, claim, endpoint)
            with held(settings.warehouse, run.kind, run.run_id), recorded_run(settings, run):
                if recipe.personalities:
                    store_personalities(settings, list(recipe.personalities))
                recipe.prepare(settings, run)
                kept.close()
                plan = recipe.plan(run)
                stage = recipe.stage(config)
                # batch mode (one way for every stage): collect, a pass, submit the next round
                stats = ask_all(
                    settings, endpoint, run, opaque(stage), opaque(plan), chunk_size, retry_failed, settings.batch_wait
                )
                if stats.get("n_waiting"):
                    return StageOutcome(run, endpoint, config, stats, 0)  # gated by the call that ends the run
                planned = recipe.planned_tables(plan, config)
                kept.enter_context(kept_open(settings.warehouse))  # closed after the release
                n_failures = gate_stage_run(settings, run, opaque(planned), recipe.gate)
    return StageOutcome(run, endpoint, config, stats, n_failures)
