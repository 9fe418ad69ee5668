"""Study flow: the study's grid of models x collections x personalities x CoT settings, then its analyses.

Experiment 1 judges LLMJudge, DL19 and DL20, Experiment 2 DL21 and trains its classifier per model; threshold
priming runs on DL19; the report covers every judge run. Each model asks its own endpoint(s) (an endpoints
file). Run names are fixed, so running it again resumes where it stopped. See docs/study.md.
"""

from __future__ import annotations

from typing import Any

from prefect import flow

from flows.classify import classify
from flows.judge import judge
from flows.metrics import metrics
from flows.priming import priming
from flows.report import report
from peras.progress import stage_line
from peras.settings import Settings, load_settings
from tasks.judge.dry_run import judge_dry_run
from tasks.study.tasks import (
    estimate_study,
    judge_parameters,
    plan_study,
    priming_parameters,
    publish_study_plan,
    summarize_study,
)


@flow(name="study", flow_run_name="study", log_prints=True)
def study(
    endpoints_file: str,
    models: list[str] | None = None,
    collections: list[str] | None = None,
    personalities: list[str] | None = None,
    limit_pairs: int | None = None,
    classifier_trials: int = 50,
    priming_trials: int = 20,
    priming_topics: int | None = None,
    dry_run: bool = False,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """Estimate what the grid will ask (dry_run: only that), then judge, metrics, classify DL21, prime DL19, report.

    models: preset names of peras/models.toml (default all); collections: of llmjudge, dl19, dl20, dl21 (default
    all); endpoints_file: TOML, per preset its base_urls, api_key_env (a variable's name) and concurrency.
    """
    settings = settings or load_settings()
    grid = plan_study(settings, endpoints_file, models, collections, personalities, limit_pairs)
    estimate = estimate_study(settings, grid, judge_dry_run)
    publish_study_plan(estimate)
    if dry_run:
        return {"estimate": estimate}
    judged = [judge(**judge_parameters(run, grid)) for run in grid.judge_runs]
    if any(r.get("n_waiting") for r in judged):  # batch mode: the analyses wait for every run's answers
        return summarize_study(grid, estimate, judged, 0, [])
    stage_line(f"study: {len(judged)} judge runs done")
    frames = [metrics(views=["agreement", "reliability"], run=r["run_name"], settings=settings) for r in judged]
    classified = [
        classify(
            collection="dl21",
            run=name,
            cot=cot,
            confidence_method="verbalized",
            trials=classifier_trials,
            settings=settings,
        )
        for name, cot in grid.classifier_runs
    ]
    stage_line(f"study: metrics of {len(frames)} runs, {len(classified)} classifier tables done")
    primed = [priming(**priming_parameters(run, grid, priming_trials, priming_topics)) for run in grid.priming_runs]
    stage_line(f"study: {len(primed)} priming runs done")
    report(runs=[r["run_name"] for r in judged], settings=settings)
    return summarize_study(grid, estimate, judged, len(classified), primed) | {"n_metric_tables": len(frames)}
