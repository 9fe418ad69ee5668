"""Shared fixtures: one real Prefect server for the whole session, real data paths, tiny warehouses."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.prefect_server import prefect_server as start_prefect_server
from support.prefect_server import server_env

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("PERAS_DATA_DIR", ROOT.parent / "shared" / "data"))


@pytest.fixture(scope="session", autouse=True)
def prefect_server() -> Iterator[str]:
    """Start one real `prefect server` for every test (flows, CLI subprocesses, deployments)."""
    home = Path(tempfile.mkdtemp(prefix="peras-prefect-"))
    with start_prefect_server(home) as url:
        os.environ.update({**server_env(home), "PREFECT_API_URL": url})
        from prefect.settings import PREFECT_API_URL, temporary_settings

        with temporary_settings(updates={PREFECT_API_URL: url}):
            yield url
            drain_prefect_workers()


def drain_prefect_workers() -> None:
    """Flush Prefect's log and event workers while the server still answers (else they retry for ~70 s)."""
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    for worker in (APILogWorker, EventsWorker):
        worker.drain_all(timeout=10)


@pytest.fixture
def shared_data() -> Path:
    """The real collections; every developer and CI has them at ../shared/data."""
    if not SHARED_DATA.is_dir():
        pytest.fail(f"real collections not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture
def settings(tmp_path: Path, shared_data: Path):
    """Settings pointing at a fresh warehouse in tmp_path and the real data directory."""
    from peras.settings import load_settings

    return load_settings(warehouse=tmp_path / "peras.duckdb", data_dir=shared_data, reports_dir=tmp_path / "reports")
