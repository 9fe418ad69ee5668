"""Judge tasks: load the pairs, register the run, plan what is left, gate item by item, publish.

The asking itself is the engine's (tasks/engine/); tasks/judge/asking.py says what a judgment asks.
"""

from __future__ import annotations

from typing import Any

import polars as pl
from prefect import get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from peras.errors import CheckFailed
from peras.llm.constraints import DIALECTS, FREE
from peras.prompting import Personality
from peras.settings import Settings
from peras.sql import query_frame, run_sql, run_statements
from peras.warehouse import now, open_migrated, require_collection, retrying_bounded
from tasks.engine.endpoint import Endpoint
from tasks.engine.runs import claim_run, stored_answer_format
from tasks.engine.spec import RunIdentity
from tasks.engine.stage import declaration
from tasks.engine.tasks import run_counts
from tasks.judge.asking import JudgeConfig, JudgePlan, JudgeStage, Pair, Pairs
from tasks.judge.runs import judge_claim, judge_run_name, planned_frames


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
    params = {"collection_id": collection_id, "subset_name": subset_name}
    with open_migrated(settings.warehouse) as con:
        require_collection(con, collection_id, subset_name)
        if pool is None:
            rows = run_sql(con, "judge/select_pairs", params).fetchall()
        else:
            pool_params = {"collection_id": collection_id, "pool_id": pool}
            rows = run_sql(con, "judge_run/select_pool_pairs", pool_params).fetchall()
    rows = rows[:limit] if limit else rows
    keep = None if topics is None else set(topics)
    return {(q, d): Pair(qt, pt, sha) for q, d, qt, pt, sha in rows if keep is None or q in keep}


def resumed_answer_format(settings: Settings, run_name: str) -> str | None:
    """The answer format the judge run of that name asked in, if it exists ('free' for a run older than formats);
    None for a new run, or a fanned-out one whose parts each probe their own host."""
    stored = stored_answer_format(settings, declaration("judge"), run_name)
    return stored if stored in (FREE, *DIALECTS) else None


@task(cache_policy=NO_CACHE)
def register_run(
    settings: Settings,
    warehouse_id: str,
    run_name: str | None,
    collection_id: str,
    subset_name: str | None,
    config: JudgeConfig,
    methods: list[str],
    pool: str | None = None,
    lease: bool = True,
) -> RunIdentity:
    """Create the run, or resume one of that name that asks the same way (same collection, model, prompts,
    parameters): the engine's one claim rule. A run judging judge-run pools is named <collection>-runs-<model> unless
    named. With `lease` the run's lease is taken in the same write (tasks/engine/lease.py): a run another live process
    asks is refused, naming it; the parts of a fanned-out run share their parent's run without it (each part's
    attempt is fenced instead)."""
    name = judge_run_name(run_name, collection_id, subset_name, pool, config.model)
    claim = judge_claim(name, collection_id, subset_name, config, methods)
    return claim_run(settings, warehouse_id, claim, config.model, config.backend, lease)


def plan_judgments(
    run: RunIdentity, pairs: Pairs, personalities: list[Personality], cot: list[bool], methods: list[str]
) -> JudgePlan:
    """Every pair x personality x CoT setting x method, streamed; what is judged on the current texts is skipped."""
    return JudgePlan(run.run_id, pairs, [p.code for p in personalities], cot, methods)


def judge_stage(config: JudgeConfig, personalities: list[Personality], pairs: Pairs) -> JudgeStage:
    """The judge's half of the engine contract: items to requests, answers to judgment rows."""
    return JudgeStage(config, {p.code: p for p in personalities}, pairs)


@task(cache_policy=NO_CACHE)
def check_judge_run(settings: Settings, run: RunIdentity, plan: JudgePlan, config: JudgeConfig) -> pl.DataFrame:
    """The judge gate, item by item: exactly the planned items present on the current texts, each derivable from
    the stored requests it references, asked of the run's model with the run's parameters, values in range, parse
    failures under the threshold. Else the run stays unpublished and the problems are listed."""
    planned_pairs, planned_settings = planned_frames(plan, config)
    params = {"run_id": run.run_id, "model": run.model, "max_share": settings.max_parse_failure_share}

    def gate(limits: str) -> tuple[list[Any], pl.DataFrame]:
        with open_migrated(settings.warehouse) as con:
            run_sql(con, limits)  # bounded memory: the check must not grow with the run
            con.register("planned_pairs", planned_pairs.to_arrow())
            con.register("planned_settings", planned_settings.to_arrow())
            problems = run_sql(con, "judge/assert_run_valid", params).fetchall()
            shares = query_frame(con, "judge/select_failure_shares", {"run_id": run.run_id})
            status = "failed_check" if problems else "published"
            reason = f"{len(problems)} problem(s): {problems[0][0]}" if problems else None
            record = {"run_id": run.run_id, "status": status, "status_reason": reason, "finished_at": now()}
            run_statements(con, declaration("judge").sql("set_run_status"), record)
        return problems, shares

    problems, shares = retrying_bounded(gate)  # a DuckLake status update may meet another run's
    if problems:
        lines = "\n".join(f"  [{problem}] {detail}" for problem, detail in problems[:20])
        more = f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else ""
        raise CheckFailed(
            f"judge gate failed; run not published (its judgments are kept for inspection):\n{lines}{more}"
        )
    return shares


def summarize(
    run: RunIdentity, endpoint: Endpoint, n_planned: int, stats: dict[str, Any], shares: Any
) -> dict[str, Any]:
    """Counts for the CLI and the artifact."""
    failures = int(shares["n_failures"].sum()) if shares.height else 0
    return run_counts(run, endpoint, stats) | {"n_planned": n_planned, "n_failures": failures}


def summarize_waiting(run: RunIdentity, endpoint: Endpoint, n_planned: int, stats: dict[str, Any]) -> dict[str, Any]:
    """Counts of a batch-mode call that ends with items waiting for a later round (nothing gated yet)."""
    return run_counts(run, endpoint, stats) | {
        "n_planned": n_planned,
        "n_waiting": stats["n_waiting"],
        "batches": stats["batches"],
        "offline": not endpoint.base_urls,
        "budget_line": stats.get("budget_line"),
    }


@task(cache_policy=NO_CACHE)
def publish_judge_artifact(summary: dict[str, Any], shares: Any) -> None:
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
        for r in shares.iter_rows(named=True)
    ]
    try:
        create_markdown_artifact("\n".join(lines), key="judge-summary", description="judge run summary")
    except Exception as exc:  # noqa: BLE001 - an artifact is a nicety; the run itself succeeded
        get_run_logger().warning("could not create artifact: %s", exc)
