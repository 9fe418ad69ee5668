"""Assess tasks: a plan's pool read, its pairs picked and stored (extended, never re-picked), labels imported
(sql/assess/). The strategies are in tasks/assess/plan.py, label files in tasks/assess/label_files.py."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
from prefect import task
from prefect.cache_policies import NO_CACHE

from peras.errors import UsageError
from peras.settings import Settings
from peras.sql import query_frame, query_rows, run_sql
from peras.warehouse import now, open_migrated, transaction
from tasks.assess.label_files import check_labels, read_label_file
from tasks.assess.plan import STRATEGIES, budget_size, next_pairs, rank_spread, signals_in
from tasks.shared.judge_runs import published_judge_run
from tasks.shared.run_files import read_run_lines


@dataclass(frozen=True)
class Plan:
    """A plan as asked for (and as stored, when it exists), and the pool it picks from."""

    plan_name: str
    collection_id: str
    run_id: str
    run_name: str
    strategy: str
    seed: int
    pool: pl.DataFrame  # sql/assess/select_pool.sql
    stored: dict[str, Any] | None  # sql/assess/select_plan.sql's row; None for a new plan
    planned: pl.DataFrame  # the pairs it holds already [query_id, doc_id]


@task(cache_policy=NO_CACHE)
def load_plan(
    settings: Settings,
    plan_name: str,
    collection_id: str,
    run_name: str,
    strategy: str,
    seed: int,
    run_files: list[str] | None = None,
) -> Plan:
    """The judge run's pool (with the run files' rank spread of each pair) and the plan of that name, checked: the
    run judged the collection and is published, a stored plan was made the same way, and the strategy has a signal
    in this run."""
    with open_migrated(settings.warehouse) as con:
        run_id, judged = published_judge_run(con, run_name)
        if judged != collection_id:
            raise UsageError(f"judge run {run_name!r} judged collection {judged!r}, not {collection_id!r}")
        pool = with_spread(query_frame(con, "assess/select_pool", {"run_id": run_id}), run_files or [])
        n_personalities = query_rows(con, "assess/count_personalities", {"run_id": run_id})[0]["n_personalities"]
        found = query_rows(con, "assess/select_plan", {"plan_name": plan_name})
        stored = found[0] if found else None
        planned = plan_pairs(con, stored["plan_id"]) if stored else pl.DataFrame(schema=PAIR_KEYS)
    asked = {"collection": collection_id, "judge run": run_name, "strategy": strategy, "seed": seed}
    check_same_plan(plan_name, stored, asked)
    check_signal(run_name, strategy, pool, n_personalities)
    if strategy == "ranking-impact" and not run_files:
        raise UsageError("--strategy ranking-impact ranks by the systems' runs: give them with --run-file")
    return Plan(plan_name, collection_id, run_id, run_name, strategy, seed, pool, stored, planned)


PAIR_KEYS = {"query_id": pl.String, "doc_id": pl.String}


def with_spread(pool: pl.DataFrame, run_files: list[str]) -> pl.DataFrame:
    """The pool with each pair's rank spread over the systems of the run files (0: no system ranks it in the top)."""
    missing = [path for path in run_files if not Path(path).is_file()]
    if missing:
        raise UsageError(f"run file {missing[0]} does not exist")
    runs = read_run_lines([Path(path) for path in run_files]) if run_files else None
    if runs is None or runs.is_empty():
        return pool.with_columns(rank_spread=pl.lit(0.0))
    spread = rank_spread(runs, runs["system"].n_unique())
    return pool.join(spread, on=["query_id", "doc_id"], how="left").with_columns(pl.col("rank_spread").fill_null(0.0))


def plan_pairs(con: Any, plan_id: str) -> pl.DataFrame:
    """The pairs a plan holds, in pick order, with their texts."""
    return query_frame(con, "assess/select_plan_pairs", {"plan_id": plan_id})


def check_same_plan(plan_name: str, stored: dict[str, Any] | None, asked: dict[str, Any]) -> None:
    """A plan extended by a later budget is made the same way as before: else say what differs."""
    if stored is None:
        return
    have = {
        "collection": stored["collection_id"],
        "judge run": stored["judge_run_name"],
        "strategy": stored["strategy"],
        "seed": stored["seed"],
    }
    for what, value in asked.items():
        if have[what] != value:
            raise UsageError(
                f"plan {plan_name!r} was made with {what} {have[what]!r}, not {value!r}: "
                "extend it as it was made, or give another --name"
            )


def check_signal(run_name: str, strategy: str, pool: pl.DataFrame, n_personalities: int) -> None:
    """A strategy that ranks by something the run does not hold would be a random draw under another name."""
    if pool.is_empty():
        raise UsageError(f"judge run {run_name!r} holds no labels: there is no pool to plan from")
    if strategy == "low-confidence" and pool["mean_confidence"].null_count() == pool.height:
        raise UsageError(
            f"judge run {run_name!r} has no confidences: --strategy low-confidence has nothing to rank by; "
            "use --strategy disagreement or random"
        )
    if strategy == "combined" and not signals_in(pool):
        raise UsageError(
            f"judge run {run_name!r} has no confidences and one personality, and no --run-file ranks its pairs: "
            "--strategy combined has nothing to rank by; give --run-file or use --strategy random"
        )
    if strategy == "disagreement" and n_personalities < 2:
        raise UsageError(
            f"judge run {run_name!r} labels with one personality: --strategy disagreement has nothing to rank by; "
            "use --strategy low-confidence or random"
        )


@task(cache_policy=NO_CACHE)
def pick_pairs(plan: Plan, budget: str) -> pl.DataFrame:
    """The pairs the budget adds to the plan (none when the plan holds as many already)."""
    if plan.strategy not in STRATEGIES:
        raise UsageError(f"--strategy {plan.strategy!r}: choose one of {', '.join(STRATEGIES)}")
    size = budget_size(budget, plan.pool.height)
    return next_pairs(plan.pool, plan.planned, plan.strategy, plan.seed, size)


@task(cache_policy=NO_CACHE)
def store_plan(settings: Settings, plan: Plan, added: pl.DataFrame) -> dict[str, Any]:
    """The plan (when new) and the pairs added, in one transaction; what the plan holds now."""
    plan_id = plan.stored["plan_id"] if plan.stored else str(uuid.uuid4())
    stamp = now()
    with open_migrated(settings.warehouse) as con, transaction(con):
        if plan.stored is None:
            record = {
                "plan_id": plan_id,
                "plan_name": plan.plan_name,
                "collection_id": plan.collection_id,
                "judge_run_id": plan.run_id,
                "strategy": plan.strategy,
                "seed": plan.seed,
                "n_pool": plan.pool.height,
                "created_at": stamp,
            }
            run_sql(con, "assess/insert_plan", record)
        con.register("assess_new_pairs", added.to_arrow())
        run_sql(con, "assess/insert_pairs", {"plan_id": plan_id, "added_at": stamp})
        con.unregister("assess_new_pairs")
    return {
        "plan_name": plan.plan_name,
        "strategy": plan.strategy,
        "n_added": added.height,
        "n_pairs": plan.planned.height + added.height,
        "n_pool": plan.pool.height,
    }


@dataclass(frozen=True)
class StoredPlan:
    """A stored plan's row and its pairs."""

    row: dict[str, Any]
    pairs: pl.DataFrame  # sql/assess/select_plan_pairs.sql
    labels: pl.DataFrame  # sql/assess/select_labels.sql


def read_plan(warehouse: Path, plan_name: str) -> StoredPlan:
    """A stored plan by name, its pairs and its labels; an unknown name says how to make one."""
    with open_migrated(warehouse) as con:
        found = query_rows(con, "assess/select_plan", {"plan_name": plan_name})
        if not found:
            raise UsageError(f"no assessment plan named {plan_name!r}: make one with `peras assess plan`")
        row = found[0]
        return StoredPlan(row, plan_pairs(con, row["plan_id"]), query_frame(con, "assess/select_labels", row))


@task(cache_policy=NO_CACHE)
def load_stored_plan(settings: Settings, plan_name: str) -> StoredPlan:
    """A stored plan by name (read_plan as a task)."""
    return read_plan(settings.warehouse, plan_name)


@task(cache_policy=NO_CACHE)
def import_labels(settings: Settings, plan: StoredPlan, path: Path, assessor: str | None) -> dict[str, Any]:
    """A file of labels for the plan's pairs, checked whole first (nothing stored when a line is wrong), then stored
    in one transaction: an assessor's new label of a pair replaces their old one."""
    labels = check_labels(read_label_file(path, assessor), plan.pairs, plan.row["plan_name"], path)
    with open_migrated(settings.warehouse) as con, transaction(con):
        con.register("assess_new_labels", labels.to_arrow())
        run_sql(con, "assess/upsert_imported", {"plan_id": plan.row["plan_id"], "labelled_at": now()})
        con.unregister("assess_new_labels")
    return {"plan_name": plan.row["plan_name"], "n_labels": labels.height, "n_pairs": plan.pairs.height}
