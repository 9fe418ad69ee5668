"""Judge tasks: load the pairs, the recipe the one flow body runs (claim, plan, gate), the summary, publish.

The asking itself is the engine's (tasks/engine/); tasks/judge/asking.py says what a judgment asks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from prefect import get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from peras.prompting import Personality
from peras.settings import Settings
from peras.warehouse import open_migrated, require_collection
from tasks.engine.endpoint import Endpoint
from tasks.engine.runs import Gate, RunClaim, gate_run
from tasks.engine.spec import RunIdentity
from tasks.engine.tasks import run_counts
from tasks.judge.asking import JudgeConfig, JudgePlan, JudgeStage, Pairs
from tasks.judge.runs import (
    count_failures,
    failure_shares,
    judge_claim,
    judge_config,
    judge_planned,
    judge_run_name,
    read_pairs,
)

JUDGE_GATE = Gate("run not published (its judgments are kept for inspection)")


@task(cache_policy=NO_CACHE)
def load_pairs(
    settings: Settings,
    collection_id: str,
    subset_name: str | None,
    limit: int | None,
    pool: str | None = None,
    topics: list[str] | None = None,
) -> Pairs:
    """The judged pairs of a collection or subset with their texts: {(query_id, doc_id): Pair}; with `pool`, the
    pairs of that judge-run pool instead (top-K passages of run files that no human judged, sql/judge_run).
    `topics` keeps the pairs of those queries only, after the limit (a part of a fanned-out run, which must plan
    exactly what the whole run planned)."""
    with open_migrated(settings.warehouse) as con:
        require_collection(con, collection_id, subset_name)
        pairs = read_pairs(con, collection_id, subset_name, limit, pool)
    if topics is None:
        return pairs
    keep = set(topics)
    return {key: pair for key, pair in pairs.items() if key[0] in keep}


def plan_judgments(
    run: RunIdentity, pairs: Pairs, personalities: list[Personality], cot: list[bool], methods: list[str]
) -> JudgePlan:
    """Every pair x personality x CoT setting x method, streamed; what is judged on the current texts is skipped."""
    return JudgePlan(run.run_id, pairs, [p.code for p in personalities], cot, methods)


def judge_stage(config: JudgeConfig, personalities: list[Personality], pairs: Pairs) -> JudgeStage:
    """The judge's half of the engine contract: items to requests, answers to judgment rows."""
    return JudgeStage(config, {p.code: p for p in personalities}, pairs)


@dataclass
class JudgeRecipe:
    """The judge's part of the one flow body (tasks/engine/running.py): its run, its stage, its streamed plan and the
    planned tables its gate reads (pairs x settings, never their product: a run is millions of judgments)."""

    collection_id: str
    subset_name: str | None
    run_name: str | None
    pool: str | None
    personalities: list[Personality]
    pairs: Pairs
    cot: list[bool]
    methods: list[str]
    n_samples: int
    gate: Gate = JUDGE_GATE

    @property
    def n_planned(self) -> int:
        """Judgments the run is made of: pairs x personalities x CoT settings x methods."""
        return len(self.pairs) * len(self.personalities) * len(self.cot) * len(self.methods)

    def configure(self, endpoint: Endpoint) -> JudgeConfig:
        """The study's defaults for remote models; short answer caps for the embedded one (recorded)."""
        return judge_config(endpoint, self.n_samples)

    def claim(self, config: JudgeConfig) -> RunClaim:
        """A judge run is fixed by its collection, model and request parameters (the subset is recorded)."""
        name = judge_run_name(self.run_name, self.collection_id, self.subset_name, self.pool, config.model)
        return judge_claim(name, self.collection_id, self.subset_name, config, self.methods)

    def stage(self, config: JudgeConfig) -> JudgeStage:
        """Items to requests, answers to judgment rows."""
        return judge_stage(config, self.personalities, self.pairs)

    def plan(self, run: RunIdentity) -> JudgePlan:
        """Every pair x personality x CoT setting x method not judged on the current texts, streamed."""
        return plan_judgments(run, self.pairs, self.personalities, self.cot, self.methods)

    def planned_tables(self, plan: JudgePlan, config: JudgeConfig) -> dict[str, pa.Table]:
        """The gate's planned_pairs and planned_settings."""
        return judge_planned(plan, config)

    def prepare(self, settings: Settings, run: RunIdentity) -> None:
        """Nothing is stored before asking but the personalities (the body stores them)."""

    def wants_logprobs(self) -> bool:
        """Not probed: a `logprob` judgment without log-probabilities is a failure with its reason."""
        return False

    def fit(self, endpoint: Endpoint) -> None:
        """Every method is asked as chosen."""


@task(cache_policy=NO_CACHE)
def check_judge_run(settings: Settings, run: RunIdentity, plan: JudgePlan, config: JudgeConfig) -> int:
    """The engine's one gate over a judge run's plan (a fanned-out run's parent gates here): exactly the planned
    items present on the current texts, each derivable from the stored requests it references, asked of the run's
    model with the run's parameters, values in range, parse failures under the threshold. Else the run stays
    unpublished and the problems are listed."""
    return gate_run(settings, run, judge_planned(plan, config), JUDGE_GATE)


@task(cache_policy=NO_CACHE)
def read_failure_shares(settings: Settings, run: RunIdentity) -> list[dict[str, Any]]:
    """Parse failures per personality, CoT setting and method over the whole run (the summary's table)."""
    with open_migrated(settings.warehouse) as con:
        return failure_shares(con, run.run_id)


def summarize(
    run: RunIdentity, endpoint: Endpoint, n_planned: int, stats: dict[str, Any], shares: list[dict[str, Any]]
) -> dict[str, Any]:
    """Counts for the CLI and the artifact."""
    return run_counts(run, endpoint, stats) | {"n_planned": n_planned, "n_failures": count_failures(shares)}


@task(cache_policy=NO_CACHE)
def publish_judge_artifact(summary: dict[str, Any], shares: list[dict[str, Any]]) -> None:
    """A markdown table of the run in the Prefect UI."""
    lines = [
        f"# Judge run `{summary['run_name']}`",
        "",
        f"{summary['n_planned']:,} judgments planned; {summary['n_judged_now']:,} made now "
        f"({summary['n_sent']:,} requests sent, {summary['n_cached']:,} from the warehouse).",
        "",
        "| personality | CoT | method | items | parse failures |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['personality']} | {r['cot']} | {r['confidence_method']} | {r['n_items']} | {r['n_failures']} |"
        for r in shares
    ]
    try:
        create_markdown_artifact("\n".join(lines), key="judge-summary", description="judge run summary")
    except Exception as exc:  # noqa: BLE001 - an artifact is a nicety; the run itself succeeded
        get_run_logger().warning("could not create artifact: %s", exc)
