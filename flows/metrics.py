"""Metrics flow: the metric views for some runs, as frames, with a markdown artifact of them."""

from __future__ import annotations

import polars as pl
from prefect import flow

from peras.settings import Settings, load_settings
from tasks.metrics.tasks import metrics_run_name, publish_metrics_artifact, read_metrics, refresh_views, resolve_views
from tasks.publish.tasks import publish_analyst_snapshot


@flow(name="metrics", flow_run_name=metrics_run_name, log_prints=True)
def metrics(
    views: list[str] | None = None,
    run: str | None = None,
    collection: str | None = None,
    cot: bool | None = None,
    settings: Settings | None = None,
) -> dict[str, pl.DataFrame]:
    """Read the chosen metric views (default: all headline views), optionally for one run/collection/CoT setting.

    The SQL views in sql/metrics are the definitions; this flow reads them for the groups asked for, scanning
    the judgments once for all views.
    """
    settings = settings or load_settings()
    names = resolve_views(views or ["all"])
    refresh_views(settings)
    publish_analyst_snapshot(settings)  # copies only if refresh_views changed the warehouse
    frames = read_metrics(settings, names, run, collection, cot)
    publish_metrics_artifact(frames)
    return frames
