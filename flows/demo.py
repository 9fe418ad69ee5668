"""The main job on the embedded defaults: the shipped sample, judged by the local CPU model, end to end."""

from __future__ import annotations

import time
from typing import Any

from prefect import flow

from flows.classify import classify
from flows.ingest import ingest
from flows.judge import judge
from flows.metrics import metrics
from flows.report import report
from peras.progress import minutes_in, stage_line
from peras.settings import Settings, load_settings
from tasks.metrics.tasks import headline_table


@flow(name="demo", flow_run_name="demo-{collection}", log_prints=True)
def demo(
    collection: str = "sample",
    limit_pairs: int | None = None,
    trials: int = 50,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """Ingest the sample, judge it (11 personalities x with/without CoT), metrics, the classifier, the report."""
    settings = settings or load_settings()
    started = time.monotonic()
    ingested = ingest(preset=collection, settings=settings)
    stage_line(f"ingest: {ingested['collection_id']} {ingested['status']} ({minutes_in(started)})")
    judged = judge(collection=collection, limit_pairs=limit_pairs, settings=settings)
    stage_line(f"judge: {judged['run_name']}: {judged['n_planned']:,} judgments ({minutes_in(started)})")
    frames = metrics(views=["agreement", "reliability"], run=judged["run_name"], settings=settings)
    stage_line(f"metrics: agreement and reliability of {judged['run_name']} ({minutes_in(started)})")
    table = classify(
        collection=collection,
        run=judged["run_name"],
        cot=False,
        confidence_method="verbalized",
        trials=trials,
        settings=settings,
    )
    stage_line(f"classify: {table.n_trials} trials on {table.n_pairs:,} pairs ({minutes_in(started)})")
    written = report(runs=[judged["run_name"]], settings=settings)
    stage_line(f"report: {written.path} ({minutes_in(started)})")
    return {
        "ingested": ingested,
        "judged": judged,
        "headline": headline_table(frames),
        "classify": table,
        "report": written,
        "elapsed_s": time.monotonic() - started,
    }
