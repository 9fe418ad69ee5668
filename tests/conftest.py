"""Shared fixtures: a real Prefect server started only for the tests that need one, real data paths, tiny warehouses.

A test marked `core` needs no Prefect server, no embedded model and no PostgreSQL: `pytest -m core` runs those
alone and starts nothing. Every other test gets one real `prefect server`, started the first time such a test
runs and shared by the rest of the session (flows, in-process CLI calls and `peras` subprocesses alike). Until
then PREFECT_API_URL points at a tripwire that refuses every request, and a `core` test that reaches Prefect
fails with the requests it made, instead of Prefect quietly starting a temporary server of its own.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.ingested import Ingested
from support.prefect_server import UNUSED_SERVICES_OFF, Tripwire, server_env
from support.prefect_server import prefect_server as start_prefect_server
from tests.browser import ARGS, CHROMIUM

# Tests script their servers' answers in order and count the requests sent: answer-format probes (one or two
# requests per new run, peras/llm/constraints.py) would take scripted answers. Tests of constrained decoding
# (tests/test_constrained*.py) ask for auto or constrained themselves; every other test asks free text, as before.
os.environ.setdefault("PERAS_ANSWER_FORMAT", "free")

ROOT = Path(__file__).resolve().parents[1]
# No periodic progress lines in tests (they would land in the exact stderr tests compare); a test of them sets it.
os.environ.setdefault("PERAS_PROGRESS_INTERVAL_S", "0")
# Shards loaded as soon as they close, as tests with tiny --chunk-size expect (a load mid-run, a superseded part found
# by its next load); tests/test_engine_loads.py tests the default interval itself.
os.environ.setdefault("PERAS_LOAD_INTERVAL_S", "0")
SHARED_DATA = Path(os.environ.get("PERAS_DATA_DIR", ROOT.parent / "shared" / "data"))
# No flow-run heartbeats in tests (every process: in-process flows, `peras` subprocesses, workers and their flow runs
# inherit it). Prefect's heartbeat thread sleeps in 1 s steps and every flow run joins it as it ends: ~0.5-0.9 s of
# waiting per flow run (a trivial flow took 1.16 s with it, 0.23 s without), hundreds of flow runs in the suite.
# No test reads Prefect's heartbeats (a fanned-out run's parts beat in the warehouse: tasks/judge/fan_out.py). JSON,
# since an environment variable cannot say None for heartbeat_frequency itself.
os.environ.setdefault("PREFECT_FLOWS", '{"heartbeat_frequency": null}')


class SessionPrefect:
    """The session's Prefect: a private home, the tripwire from the start, the real server once asked for."""

    def __init__(self) -> None:
        self.home = Path(tempfile.mkdtemp(prefix="peras-prefect-"))
        self.tripwire = Tripwire()
        self.url: str | None = None
        self._stack = contextlib.ExitStack()
        # Set before any test module imports Prefect, so its settings start from here.
        os.environ.update({**server_env(self.home), "PREFECT_API_URL": self.tripwire.url})

    def server(self) -> str:
        """The shared server's API URL, starting it on first use (~20 s on 2 cores)."""
        if self.url is None:
            self.url = self._stack.enter_context(start_prefect_server(self.home, UNUSED_SERVICES_OFF))
            os.environ["PREFECT_API_URL"] = self.url  # `peras` subprocesses and workers inherit it
            if "prefect.context" in sys.modules:  # Prefect read the tripwire's URL when it was imported
                from prefect.context import refresh_global_settings_context

                refresh_global_settings_context()
        return self.url

    def close(self) -> None:
        """Flush Prefect's workers while the server still answers, stop it, stop the tripwire."""
        if self.url is not None:
            drain_prefect_workers()
        self._stack.close()
        self.tripwire.close()
        shutil.rmtree(self.home, ignore_errors=True)


def drain_prefect_workers() -> None:
    """Flush Prefect's log and event workers while the server still answers (else they retry for ~70 s)."""
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    for worker in (APILogWorker, EventsWorker):
        worker.drain_all(timeout=10)


_prefect: SessionPrefect | None = None


def session_prefect() -> SessionPrefect:
    assert _prefect is not None, "pytest_configure sets up the session's Prefect"
    return _prefect


def pytest_configure(config: pytest.Config) -> None:
    global _prefect
    _prefect = SessionPrefect()


WORKER = os.environ.get("PYTEST_XDIST_WORKER")  # set in pytest-xdist's workers


def shared_ingested(basetemp: Path) -> Path:
    """Where the workers of an xdist session keep the warehouses they ingested (beside their own directories)."""
    return basetemp / "peras-ingested"


def pytest_unconfigure(config: pytest.Config) -> None:
    global _prefect
    if config.getoption("numprocesses", None) and not WORKER:  # the xdist controller: every worker has ended
        shutil.rmtree(shared_ingested(config._tmp_path_factory.getbasetemp()), ignore_errors=True)  # type: ignore[attr-defined]
    if _prefect is not None:
        _prefect.close()
        _prefect = None


NEEDS_MORE = ("integration", "model", "live")
_tripwire_seen = pytest.StashKey[int]()


# The files whose tests take minutes (last CI: fan-out ~6 min, lake ~6, the docs' numbers ~2, then ~1 each), longest
# first. scripts/test.sh hands whole files to two workers in collection order (--dist loadfile
# --no-loadscope-reorder): these go out first, so no worker is left alone at the end with a long file while the
# other is done. xdist's own reorder (most tests first) would send them last.
LONG_FILES = (
    "test_fan_out.py",
    "test_lake.py",
    "test_evaluate_doc_numbers.py",
    "test_deploy.py",
    "test_chaos.py",
    "test_report.py",
    "test_metrics_llmjudge.py",
    "test_batch.py",
    "test_gguf_upcast.py",
    "test_live_progress.py",
    "test_judge_embedded.py",
    "test_readme_commands.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The long files first (LONG_FILES), each file's tests in their order. A test is `core` (starts nothing) or not:
    refuse a test marked both ways, or core and asking for the server."""
    rank = {name: i for i, name in enumerate(LONG_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(LONG_FILES)))  # stable: the rest keep their order
    wrong = [
        item.nodeid
        for item in items
        if item.get_closest_marker("core") is not None
        and (any(item.get_closest_marker(m) for m in NEEDS_MORE) or "prefect_server" in item.fixturenames)
    ]
    if wrong:
        raise pytest.UsageError(
            f"marked core but needing more (integration, model, live or the prefect_server fixture): {', '.join(wrong)}"
        )


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Start the shared server before any fixture of a test that is not `core` (module fixtures run flows too)."""
    prefect = session_prefect()
    if item.get_closest_marker("core") is None:
        prefect.server()
    item.stash[_tripwire_seen] = len(prefect.tripwire.requests)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    """A `core` test that talked to Prefect fails here, naming what it asked."""
    requests = session_prefect().tripwire.requests[item.stash.get(_tripwire_seen, 0) :]
    if requests and item.get_closest_marker("core") is not None:
        pytest.fail(
            f"{item.nodeid} is marked core but reached Prefect ({', '.join(requests[:3])}): "
            "remove its core marker so it gets the shared Prefect server",
            pytrace=False,
        )


@pytest.fixture(scope="session")
def prefect_server() -> str:
    """The shared real `prefect server`'s API URL (started for every test that is not `core`)."""
    return session_prefect().server()


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


@pytest.fixture(scope="session")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ingested]:
    """`ingested("sample", settings)`: a fresh warehouse as the ingest flow leaves it, ingested once per session
    (under pytest-xdist once for all the workers: in their common directory, removed by the controller at the end)."""
    helper = Ingested(shared_ingested(tmp_path_factory.getbasetemp().parent) if WORKER else None)
    yield helper
    helper.close()


@pytest.fixture
def browser():
    """A headless system Chromium (tests/browser.py), closed after the test; skipped without Playwright."""
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield launched
        launched.close()
