"""Mistakes answer in seconds: a command checks what the user can get wrong before any flow or Prefect server starts.

Each case runs `peras` in a new process as a user does, with no PREFECT_API_URL: had the command started the
local Prefect server (or a flow), its home directory would exist afterwards. The time bound is generous for CI
on a loaded machine; on a warm idle machine each answers in ~2 s (the figure printed with -s).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.fake_openai import FakeOpenAI
from support.prefect_server import free_port
from tests.conftest import SHARED_DATA

ROOT = Path(__file__).resolve().parents[1]
BOUND_S = 15.0  # the 3 s on a warm machine, with room for a loaded CI runner


def peras_alone(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    """`peras ARGS` with no Prefect server anywhere; fails the test if it started one."""
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env |= {"PERAS_PREFECT_HOME": str(tmp_path / "prefect-home"), "PERAS_PREFECT_PORT": str(free_port())}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "cli.main", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    elapsed = time.monotonic() - started
    assert not (tmp_path / "prefect-home").exists(), "the command started the local Prefect server"
    print(f"\n{' '.join(args[:2])}: {elapsed:.1f} s")
    return done, elapsed


@pytest.mark.core
@pytest.mark.parametrize(
    ("args", "message"),
    [
        # no warehouse at all: no new empty one is made at a mistyped path
        (("judge", "dl20"), "error: collection 'dl20' is not in the warehouse: run `peras ingest dl20`\n"),
        (("pairwise", "dl20"), "error: collection 'dl20' is not in the warehouse: run `peras ingest dl20`\n"),
        (("priming", "dl19"), "error: collection 'dl19' is not in the warehouse: run `peras ingest dl19`\n"),
        (
            ("fuse", "--collection", "dl19", "--runs", "x", "--baselines-only"),
            "error: collection 'dl19' is not in the warehouse: run `peras ingest dl19`\n",
        ),
    ],
    ids=lambda value: value[0] if isinstance(value, tuple) else "",
)
def test_a_collection_not_ingested_answers_at_once(tmp_path, args, message):
    warehouse = tmp_path / "peras.duckdb"
    done, elapsed = peras_alone(tmp_path, *args, "--warehouse", str(warehouse))
    assert (done.returncode, done.stdout, done.stderr) == (2, "", message)
    assert not warehouse.exists()
    assert elapsed < BOUND_S


@pytest.fixture(scope="module")
def sample_warehouse(tmp_path_factory, ingested) -> Path:
    from peras.settings import load_settings

    directory = tmp_path_factory.mktemp("preflight")
    settings = load_settings(warehouse=directory / "peras.duckdb", data_dir=SHARED_DATA)
    ingested("sample", settings)
    return settings.warehouse


def unreachable_url() -> str:
    return f"http://127.0.0.1:{free_port()}/v1"


@pytest.mark.integration
@pytest.mark.parametrize(
    ("args", "message"),
    [
        # a collection the warehouse lacks (it has the sample)
        (("judge", "dl20"), "error: collection 'dl20' is not in the warehouse: run `peras ingest dl20`\n"),
        # a subset it lacks
        (
            ("judge", "sample", "--subset", "nope"),
            "error: collection 'sample' has no subset 'nope' (see `peras subsets sample`)\n",
        ),
        # an unknown personality set
        (
            ("judge", "sample", "--personality-set", "mine"),
            "error: no personality set 'mine' in the warehouse (published, or that version); "
            "build one with `peras personas build mine`\n",
        ),
        # an unknown personality code
        (
            ("pairwise", "sample", "--personality", "XX"),
            "error: unknown personality XX; known: default, HA, LA, HC, LC, HE, LE, HN, LN, HO, LO\n",
        ),
        # a server nobody answers on
        (("judge", "sample", "--model", "m", "--base-url", "UNREACHABLE"), "error: cannot reach UNREACHABLE"),
        (("priming", "sample", "--model", "m", "--base-url", "UNREACHABLE"), "error: cannot reach UNREACHABLE"),
    ],
    ids=lambda value: "-".join(value[:3]) if isinstance(value, tuple) else "",
)
def test_a_mistake_answers_before_any_flow_starts(tmp_path, sample_warehouse, args, message):
    url = unreachable_url()
    args = tuple(url if arg == "UNREACHABLE" else arg for arg in args)
    done, elapsed = peras_alone(tmp_path, *args, "--warehouse", str(sample_warehouse))
    assert (done.returncode, done.stdout) == (2 if "reach" not in message else 1, "")
    assert done.stderr.startswith(message.replace("UNREACHABLE", url)), done.stderr
    assert done.stderr.count("\n") == 1
    assert elapsed < BOUND_S


@pytest.mark.integration
def test_a_server_that_does_not_serve_the_model_answers_before_any_flow(tmp_path, sample_warehouse):
    with FakeOpenAI(models=["served-model"]) as server:
        args = ("judge", "sample", "--model", "other", "--base-url", server.base_url)
        done, elapsed = peras_alone(tmp_path, *args, "--warehouse", str(sample_warehouse))
        assert server.chat_requests == []
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == f"error: {server.base_url} does not serve model 'other'; it serves: served-model\n"
    assert elapsed < BOUND_S


@pytest.mark.core
@pytest.mark.parametrize(
    ("entries", "message"),
    [
        # the chosen preset has no entry
        ("[llama-3-70b]\nbase_urls = ['http://gpu:8000/v1']\n", "error: endpoints file ENDPOINTS has no [llama-3-8b] "),
        # only the chosen preset's entry: nothing asked of the others (gpt-4o ...), the next check is the warehouse's
        ("[llama-3-8b]\nbase_urls = ['http://gpu:8000/v1']\n", "error: collection 'dl19' is not in the warehouse: "),
    ],
)
def test_a_study_dry_run_needs_endpoints_only_for_its_models(tmp_path, entries, message):
    endpoints = tmp_path / "endpoints.toml"
    endpoints.write_text(entries)
    args = ("study", "--endpoints", str(endpoints), "--model", "llama-3-8b", "--collection", "dl19", "--dry-run")
    done, elapsed = peras_alone(tmp_path, *args, "--warehouse", str(tmp_path / "peras.duckdb"))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith(message.replace("ENDPOINTS", str(endpoints))), done.stderr
    assert elapsed < BOUND_S
