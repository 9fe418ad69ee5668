"""A judge run spread over hosts: parts run as child flow runs any worker of a pool can take, watched by the parent.

The parent (flows/judge.py `judge` with `parts`) claims the run, splits it into parts (personality groups or topic
groups), starts one `judge-part` flow run per part through `run_deployment`, and waits. Each child asks its part
through the engine on its own host's endpoint, journals shards in its own directory and commits them itself
(on a DuckLake warehouse, concurrently with the other hosts). While it works it writes a beat every
`BEAT_INTERVAL_S` (table judge_part_beats). A part whose child run failed or crashed, or whose beats stopped for
`lost_after_s` (its host died: nobody is left to report it; also when it died while its run was still Pending,
taken by a worker but not yet begun), is started again, up to `max_attempts` times; the new
child resumes from what was committed, as any judge run does. Then the parent gates and publishes the whole run.

On a loaded machine beats come late and a flow run takes long to begin: the time allowed follows what the run's beats
actually look like (`lost_allowance`: at least `lost_after_s`, else three times the longest gap between two beats,
and for a part that never beat three times the longest start seen). A part taken for lost that was in fact alive
cannot commit any more: each start of a part is its new current attempt (table run_attempts), and the engine
refuses the commits of any other attempt of that part (tasks/engine/shards.py).
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any, cast

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from peras.errors import CheckFailed, UsageError
from peras.periodic import periodically
from peras.prompting import Personality
from peras.settings import Settings
from peras.sql import run_sql
from peras.warehouse import connect, now, retrying, transaction
from tasks.engine.endpoint import Endpoint, serving_endpoint
from tasks.engine.lease import held
from tasks.engine.run_status import recorded_run
from tasks.engine.running import checked_endpoint
from tasks.engine.runs import answered_as, claim_run
from tasks.engine.spec import Attempt, Plan, RunIdentity
from tasks.engine.tasks import (
    ask_all,
    count_pending,
    identify_warehouse,
    opaque,
    run_counts,
    store_personalities,
)
from tasks.judge.asking import Pairs
from tasks.judge.runs import count_failures
from tasks.judge.tasks import JudgeRecipe, check_judge_run, read_failure_shares
from tasks.publish.tasks import publish_analyst_snapshot

BEAT_INTERVAL_S = 5.0
SLACK = 3.0  # a part is lost after this many times the longest beat gap (or start) seen in the run
NEVER_SEEN = 4.0  # before any part has beaten, a part that never beat is lost after this many times lost_after_s
SPLITS = ("personality", "topic")


@dataclass
class Part:
    """One child run's share of the run: personality codes and (when split by topic) query ids."""

    name: str
    personalities: list[str]
    topics: list[str] | None = None
    attempts: list[str] = field(default_factory=list)  # the flow runs started for it, in order


def remote_endpoint(settings: Settings, backend: str | None) -> Endpoint:
    """What a fanned-out run asks: the model every host serves (each child finds its own host's server)."""
    if not settings.model:
        raise UsageError(
            "a fanned-out run needs --model (the model every host's server serves; each worker's PERAS_BASE_URLS "
            "points at its own server)"
        )
    # The parts' hosts may speak different dialects, and a run asks one way: a fanned-out run asks free text.
    if settings.answer_format == "constrained":
        raise UsageError(
            "a fanned-out judge run asks free text (its hosts may enforce different constraints); "
            "use --answer-format auto or free, or judge on one endpoint (docs/constrained.md)"
        )
    return Endpoint(settings.base_urls, settings.model, backend or "openai-compatible", "free", "fanned-out run")


def split_parts(personalities: list[Personality], pairs: Pairs, parts: int, split_by: str) -> list[Part]:
    """`parts` groups of personalities (round robin) or of topics (by query id order, balanced by pairs)."""
    if split_by not in SPLITS:
        raise UsageError(f"--split-by must be one of {', '.join(SPLITS)}, not {split_by!r}")
    if parts < 1:
        raise UsageError(f"--parts must be at least 1, not {parts}")
    codes = [p.code for p in personalities]
    if split_by == "personality":
        groups = [codes[i::parts] for i in range(min(parts, len(codes)))]
        return [Part(f"p{i + 1}-of-{len(groups)}", group) for i, group in enumerate(groups)]
    counts: dict[str, int] = {}
    for query_id, _ in pairs:
        counts[query_id] = counts.get(query_id, 0) + 1
    n = min(parts, len(counts))
    loads = [0] * n
    topics: list[list[str]] = [[] for _ in range(n)]
    for query_id in sorted(counts, key=lambda q: (-counts[q], q)):  # largest first onto the lightest part
        lightest = loads.index(min(loads))
        topics[lightest].append(query_id)
        loads[lightest] += counts[query_id]
    return [Part(f"t{i + 1}-of-{n}", codes, sorted(group)) for i, group in enumerate(topics)]


@task(cache_policy=NO_CACHE)
def check_spread(settings: Settings, deployment: str, retry_failed: bool) -> None:
    """A run spread over hosts can be: not in batch mode, not a retry of failures, and the deployment the parts run
    as exists on the Prefect server. Checked before the run is claimed, so a refusal leaves nothing behind (no run,
    no failed status) and says what to do."""
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound
    from prefect.settings import PREFECT_API_URL

    if settings.mode == "batch":
        raise UsageError("--mode batch is not available with --parts: a batch needs no hosts of your own")
    if retry_failed:
        raise UsageError("--retry-failed is not available with --parts: run it without --parts on one host")
    try:
        with get_client(sync_client=True) as client:
            client.read_deployment_by_name(deployment)
    except ObjectNotFound:
        raise UsageError(
            f"no deployment {deployment!r} on the Prefect server at {PREFECT_API_URL.value()}: run `peras deploy`"
            " (it registers judge-part/hosts), start a worker of its pool on each host, then run this again"
        ) from None
    except ValueError as exc:  # not flow/deployment
        raise UsageError(f"--deployment {deployment!r}: {exc}") from None


def run_parts(
    settings: Settings,
    run: RunIdentity,
    parts: list[Part],
    parameters: dict[str, Any],
    deployment: str,
    max_attempts: int,
    lost_after_s: float,
    poll_s: float = 2.0,
) -> list[Part]:
    """Start a child flow run per part, wait for all, start again a part whose run failed or whose host was lost."""
    from prefect.client.orchestration import get_client

    parent = PartStarter(settings, run, parameters, deployment, max_attempts)
    try:
        for part in parts:
            parent.start(part)
    except Exception as exc:  # no such deployment, no server: one line, not Prefect's traceback
        raise UsageError(f"cannot start the parts through deployment {deployment!r}: {exc}") from None
    pending = list(parts)
    with get_client(sync_client=True) as client:
        while pending:
            time.sleep(poll_s)
            beats = beat_records(settings, run)
            allowance = lost_allowance(beats, parent.started, lost_after_s)
            for part in list(pending):
                if parent.done(client, part, beats, allowance):
                    pending.remove(part)
    return parts


@dataclass
class PartStarter:
    """The parent's side of each part: its child flow run started, watched, and started again (at most
    `max_attempts` times in all) when it failed or its host was lost."""

    settings: Settings
    run: RunIdentity
    parameters: dict[str, Any]
    deployment: str
    max_attempts: int
    started: dict[str, Any] = field(default_factory=dict)  # flow run -> when this parent started it (naive UTC)

    def start(self, part: Part) -> None:
        from prefect.client.schemas.objects import FlowRun
        from prefect.deployments import run_deployment

        run, attempt = self.run, len(part.attempts) + 1
        start_attempt(self.settings, run, part.name, attempt)  # from now on, only this attempt's commits are accepted
        at = now()
        # Called from sync code, run_deployment returns the FlowRun itself, not a coroutine.
        child = cast(
            FlowRun,
            run_deployment(
                name=self.deployment,
                parameters=self.parameters
                | {
                    "run_name": run.run_name,
                    "part": part.name,
                    "attempt": attempt,
                    "personalities": part.personalities,
                    "topics": part.topics,
                },
                timeout=0,
                flow_run_name=f"judge-part-{run.run_name}-{part.name}-a{attempt}",
                tags=["peras", "stage:judge", f"part:{part.name}"],
            ),
        )
        part.attempts.append(str(child.id))
        self.started[str(child.id)] = at
        get_run_logger().info("part %s: flow run %s (attempt %d)", part.name, child.id, attempt)

    def retry(self, part: Part, why: str) -> None:
        if len(part.attempts) >= self.max_attempts:
            raise CheckFailed(
                f"part {part.name} of judge run {self.run.run_name} {why} on each of its {self.max_attempts} attempts "
                f"(flow runs {', '.join(part.attempts)}); what was committed is kept: run the same command to resume"
            )
        get_run_logger().warning("part %s %s (flow run %s); starting it again", part.name, why, part.attempts[-1])
        self.start(part)

    def done(self, client: Any, part: Part, beats: dict[str, Beats], allowance: Allowance) -> bool:
        """Whether the part's flow run completed; one that ended otherwise, or whose host is lost, starts again."""
        from prefect.states import Crashed

        state = client.read_flow_run(part.attempts[-1]).state
        if state is None:
            return False
        if state.is_completed():
            return True
        if state.is_final():
            self.retry(part, f"ended {state.name}: {state.message or ''}".strip())
        elif state.is_running() or state.is_pending():
            # Pending: a worker took it and started its process; a host killed before the flow began
            # leaves it Pending for ever, as one killed mid-part leaves it Running.
            beat = beats.get(part.attempts[-1])
            waited = allowance.gap_s if beat is not None else allowance.start_s
            if is_lost(beat.last if beat else None, state.timestamp, waited):
                message = f"no beat for {waited:.0f} s: its host is taken as lost"
                client.set_flow_run_state(part.attempts[-1], Crashed(message=message), force=True)
                self.retry(part, "was lost")
        return False


def is_lost(last_beat: Any, state_since: Any, lost_after_s: float) -> bool:
    """A started child that has not beaten for `lost_after_s` (counted from its state's start if it never beat)."""
    since = last_beat if last_beat is not None else state_since.replace(tzinfo=None)
    return bool(now() - since > timedelta(seconds=lost_after_s))


@dataclass(frozen=True)
class Beats:
    """What one flow run's beats look like: its first and last beat (naive UTC), the longest gap between two."""

    first: Any
    last: Any
    longest_gap_s: float


@dataclass(frozen=True)
class Allowance:
    """How long a part may stay silent before its host is taken for lost: between beats, and before its first."""

    gap_s: float
    start_s: float


def beat_records(settings: Settings, run: RunIdentity) -> dict[str, Beats]:
    """flow run id -> its beats so far."""
    with connect(settings.warehouse, read_only=True) as con:
        found = run_sql(con, "judge/select_part_beats", {"run_id": run.run_id}).fetchall()
    return {flow_run: Beats(first, last, float(gap or 0.0)) for flow_run, first, last, gap in found}


def lost_allowance(beats: dict[str, Beats], started: dict[str, Any], lost_after_s: float) -> Allowance:
    """The silence allowed, from what the run's beats look like: at least lost_after_s; SLACK times the longest gap
    seen between two beats; before a part's first beat, SLACK times the longest start seen (from the parent starting
    a flow run to its first beat), or NEVER_SEEN times lost_after_s while no part has beaten yet."""
    gap = max((b.longest_gap_s for b in beats.values()), default=0.0)
    starts = [(b.first - started[run]).total_seconds() for run, b in beats.items() if run in started]
    start = SLACK * max(starts) if starts else NEVER_SEEN * lost_after_s
    return Allowance(max(lost_after_s, SLACK * gap), max(lost_after_s, start))


def start_attempt(settings: Settings, run: RunIdentity, part: str, attempt: int) -> None:
    """Make `attempt` the part's current one: every earlier attempt's commits are refused from now on."""
    values = {"kind": run.kind, "run_id": run.run_id, "part": part, "attempt": attempt, "now": now()}

    def record() -> None:
        with connect(settings.warehouse) as con, transaction(con):
            run_sql(con, "engine/attempt/start_attempt", values)

    retrying(record)  # on a lake, a commit of the old attempt may conflict with this write: then it is retried


@contextlib.contextmanager
def beating(settings: Settings, run: RunIdentity, part: str) -> Iterator[None]:
    """Write a beat for this child run every BEAT_INTERVAL_S while the block runs (a failed write is skipped)."""
    from prefect.runtime import flow_run

    row = {"run_id": run.run_id, "part": part, "flow_run_id": str(flow_run.id), "host": socket.gethostname()}

    def beat() -> None:
        with connect(settings.warehouse) as con:
            run_sql(con, "judge/insert_part_beat", row | {"beat_at": now()})

    # a missed beat is one beat; the parent allows many
    with periodically(BEAT_INTERVAL_S, lambda: retrying(beat), f"beat-{part}", at_start=True):
        yield


def part_settings(settings: Settings, part: str, attempt: int) -> Settings:
    """An attempt at a part journals in its own shard directory: two parts of one run, or two attempts at one part
    (an old one still alive), on one host never load or delete each other's files."""
    return settings.model_copy(update={"shards_dir": settings.shards / "parts" / part / f"a{attempt}"})


def part_identity(run: RunIdentity, part: str, attempt: int) -> RunIdentity:
    """The run as this attempt commits it: its shard loads are refused once a newer attempt of the part started."""
    return replace(run, attempt=Attempt(part, attempt))


@task(cache_policy=NO_CACHE)
def check_part_done(settings: Settings, plan: Plan) -> None:
    """Every item of the part has a stored outcome (else the child fails, and the parent starts it again)."""
    left = count_pending(settings, plan)
    if left:
        raise CheckFailed(f"{left} item(s) of this part have no stored outcome; the part will be asked again")


def judge_on_hosts(
    settings: Settings,
    recipe: JudgeRecipe,
    split: tuple[int, str],
    asked: dict[str, Any],
    backend: str | None,
    supervision: tuple[str, int, float],
) -> dict[str, Any]:
    """The parent's share of a run spread over hosts: claim the run (holding its lease), split it into `split` =
    (parts, split_by), start and watch the parts (`run_parts`, with `supervision` = (deployment, max_attempts,
    lost_after_s); every part's flow run gets the recipe's parameters and `asked`: limit_pairs, chunk_size,
    personality_set), gate the whole run, publish it. Returns what the parent reports (summarize_fan_out)."""
    warehouse_id = identify_warehouse(settings)
    endpoint = remote_endpoint(settings, backend)
    config = recipe.configure(endpoint)
    run = claim_run(settings, warehouse_id, answered_as(recipe.claim(config), endpoint), config.model, config.backend)
    store_personalities(settings, recipe.personalities)
    with held(settings.warehouse, run.kind, run.run_id), recorded_run(settings, run):
        parts = split_parts(recipe.personalities, recipe.pairs, *split)
        # one answer format for every part (remote_endpoint): each host may serve another dialect
        common = part_parameters(recipe, asked) | {"model": endpoint.model, "answer_format": "free"}
        done = run_parts(settings, run, parts, common | {"backend": endpoint.backend}, *supervision)
        check_judge_run(settings, run, opaque(recipe.plan(run)), config)
    publish_analyst_snapshot(settings)
    shares = read_failure_shares(settings, run)
    return summarize_fan_out(run, recipe.n_planned, shares, done)


def part_parameters(recipe: JudgeRecipe, asked: dict[str, Any]) -> dict[str, Any]:
    """What every part's flow run (judge-part) is given of the run: the recipe's collection, settings and pool."""
    return asked | {
        "collection": recipe.collection_id,
        "subset": recipe.subset_name,
        "cot": recipe.cot,
        "confidence_methods": recipe.methods,
        "n_samples": recipe.n_samples,
        "pool": recipe.pool,
    }


def ask_part(
    settings: Settings, recipe: JudgeRecipe, part: str, attempt: int, backend: str | None, chunk_size: int
) -> dict[str, Any]:
    """One part of a fanned-out run on this worker's endpoint: the run claimed as the parent claimed it (without its
    lease: the parent holds it; this attempt is fenced instead), the part's items asked and committed while it
    beats, then checked all there. The parent gates and publishes the whole run."""
    warehouse_id = identify_warehouse(settings)
    with serving_endpoint(settings, backend) as endpoint:
        endpoint, config = checked_endpoint(settings, recipe, endpoint)
        claimed = claim_run(settings, warehouse_id, recipe.claim(config), config.model, config.backend, lease=False)
        run = part_identity(claimed, part, attempt)
        with beating(settings, run, part):
            plan = recipe.plan(run)
            stats = ask_all(settings, endpoint, run, opaque(recipe.stage(config)), opaque(plan), chunk_size)
            check_part_done(settings, opaque(plan))
    return run_counts(run, endpoint, stats) | {"part": part}


def summarize_fan_out(
    run: RunIdentity, n_planned: int, shares: list[dict[str, Any]], parts: list[Part]
) -> dict[str, Any]:
    """What the parent reports: the run, what it planned, its failures, and the flow runs each part took."""
    failures = count_failures(shares)
    return {
        "run_name": run.run_name,
        "run_id": run.run_id,
        "model": run.model,
        "n_planned": n_planned,
        "n_failures": failures,
        "parts": {part.name: part.attempts for part in parts},
    }
