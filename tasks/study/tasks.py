"""Study tasks: resolve the grid, estimate what it will ask, hand each run its parameters, summarize.

The judge, metrics, classifier, priming and report runs themselves are the other stages' flows (flows/study.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from peras.errors import UsageError
from peras.models import load_model_presets
from peras.prompting import sampling_params, select_personalities
from peras.settings import Settings
from tasks.study.estimate import Estimate, JudgeDryRun, estimate_judge_run, format_estimate
from tasks.study.grid import PRIMING_COLLECTION, JudgeRun, PrimingRun, StudyGrid, build_grid

STUDY_PROMPTS = ("label_nocot", "label_cot", "confidence")  # what the study's judge runs send


@task(cache_policy=NO_CACHE)
def plan_study(
    settings: Settings,
    endpoints_file: str,
    models: list[str] | None,
    collections: list[str] | None,
    personalities: list[str] | None,
    limit_pairs: int | None,
) -> StudyGrid:
    """The grid, checked whole before anything is asked: presets, endpoints, API keys, personalities, subsets."""
    presets = load_model_presets()
    codes = [p.code for p in select_personalities(personalities, settings.personalities_dir)]
    grid = build_grid(settings, presets, Path(endpoints_file), models, collections, codes, limit_pairs)
    for run in grid.judge_runs:
        check_study_params(run)
    return grid


def check_study_params(run: JudgeRun) -> None:
    """A preset's parameters must be the ones the judge sends (those of its prompt files), else say so."""
    for prompt in STUDY_PROMPTS:
        sent = sampling_params(prompt)
        if {key: float(value) for key, value in sent.items()} != run.preset.params:
            raise UsageError(
                f"model preset {run.preset.name} sets {run.preset.params}, but the judge sends {sent} ({prompt})"
            )


@task(cache_policy=NO_CACHE)
def estimate_study(settings: Settings, grid: StudyGrid, dry_run: JudgeDryRun) -> Estimate:
    """What the grid's judge runs will ask: per preset x collection x CoT setting, requests, tokens, cost;
    `dry_run` gives the judge's plan and stage of a run (the judge's own, handed over by the flow)."""
    estimate = Estimate(rows=[])
    seen: dict[str, set[str]] = {}
    for run in grid.judge_runs:
        rows = estimate_judge_run(settings, run, grid, seen.setdefault(run.preset.name, set()), dry_run)
        estimate.rows.extend(rows)
    return estimate


def judge_parameters(run: JudgeRun, grid: StudyGrid) -> dict[str, Any]:
    """The judge flow's parameters for one run of the grid."""
    return {
        "collection": run.collection,
        "subset": run.subset,
        "personalities": grid.personalities,
        "cot": run.cot,
        "run_name": run.run_name,
        "limit_pairs": grid.limit_pairs,
        "backend": run.preset.backend,
        "settings": run.settings,
    }


def priming_parameters(run: PrimingRun, grid: StudyGrid, trials: int, limit_topics: int | None) -> dict[str, Any]:
    """The priming flow's parameters for one preset: its penalties, every chosen personality."""
    return {
        "collection": PRIMING_COLLECTION,
        "trials": trials,
        "limit_topics": limit_topics,
        "personalities": grid.personalities,
        "run_name": run.run_name,
        "frequency_penalty": run.preset.priming.frequency_penalty,
        "presence_penalty": run.preset.priming.presence_penalty,
        "backend": run.preset.backend,
        "settings": run.settings,
    }


@task(cache_policy=NO_CACHE)
def publish_study_plan(estimate: Estimate) -> None:
    """The plan as a markdown table in the Prefect UI (and the run's log)."""
    lines = format_estimate(estimate)
    get_run_logger().info("\n".join(lines))
    try:
        create_markdown_artifact("```\n" + "\n".join(lines) + "\n```", key="study-plan", description="study plan")
    except Exception as exc:  # noqa: BLE001 - an artifact is a nicety
        get_run_logger().warning("could not create artifact: %s", exc)


def summarize_study(
    grid: StudyGrid, estimate: Estimate, judged: list[dict[str, Any]], classified: int, primed: list[dict[str, Any]]
) -> dict[str, Any]:
    """What the CLI prints after the runs: each run's counts, and the requests sent against the estimate. In batch
    mode a run may still wait for answers (`n_waiting`): the study stops after the judge runs until none waits."""
    return {
        "estimate": estimate,
        "judge_runs": [
            {
                key: r.get(key, 0)
                for key in ("run_name", "n_planned", "n_judged_now", "n_sent", "n_cached", "n_failures", "n_waiting")
            }  # fmt: skip
            for r in judged
        ],
        "priming_runs": [
            {
                key: r.get(key, 0)
                for key in ("run_name", "n_batches", "n_judged_now", "n_sent", "n_failures", "n_waiting")
            }  # fmt: skip
            for r in primed
        ],
        "n_waiting_runs": sum(bool(r.get("n_waiting")) for r in [*judged, *primed]),
        "n_classified": classified,
        "n_sent": sum(r["n_sent"] for r in judged),
    }
