"""Publish tasks shared by every stage that writes: the analysts' read-only snapshot of the warehouse."""

from __future__ import annotations

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from peras.settings import Settings
from peras.warehouse import publish_snapshot


@task(cache_policy=NO_CACHE)
def publish_analyst_snapshot(settings: Settings, throttled: bool = False) -> str | None:
    """Refresh `<warehouse stem>.analyst.duckdb` from the warehouse; never fails the stage (None: not refreshed)."""
    path = publish_snapshot(settings, throttled=throttled, warn=get_run_logger().warning)
    return str(path) if path else None
