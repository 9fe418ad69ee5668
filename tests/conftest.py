"""Shared fixtures: one real Prefect server for the whole session, real data paths, tiny warehouses."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("PERAS_DATA_DIR", ROOT.parent / "shared" / "data"))


def free_port() -> int:
    """A free TCP port on loopback."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session", autouse=True)
def prefect_server() -> Iterator[str]:
    """Start one real `prefect server` for every test (flows, CLI subprocesses, deployments)."""
    home = Path(tempfile.mkdtemp(prefix="peras-prefect-"))
    port = free_port()
    env = {
        **os.environ,
        "PREFECT_HOME": str(home),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_API_URL": "",
        "PREFECT_LOGGING_LEVEL": "WARNING",
    }
    log = (home / "server.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}/api"
    deadline = time.monotonic() + 90
    while True:
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"prefect server did not start: {(home / 'server.log').read_text()[-2000:]}")
        time.sleep(0.5)
    os.environ.update(
        {
            "PREFECT_HOME": str(home),
            "PREFECT_API_URL": url,
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "PREFECT_LOGGING_LEVEL": "WARNING",
        }
    )
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: url}):
        yield url
        drain_prefect_workers()
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()


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

    return load_settings(
        warehouse=tmp_path / "peras.duckdb", data_dir=shared_data, reports_dir=tmp_path / "reports"
    )
