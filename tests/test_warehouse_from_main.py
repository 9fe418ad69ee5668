"""Issue 49: a warehouse made by main before the views were ordered and the stage's tables came from its declaration
(commit 7dd3df8) opens with this code and keeps every run: the old code, taken from git into a temp dir, ingests the
sample and asks a pairwise run and a toy run in processes of their own; this code lists both, resumes both sending
nothing, and its views are created over the file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest

from peras.paths import PROJECT_ROOT
from peras.warehouse import open_migrated
from support.fake_openai import FakeOpenAI, Reply
from tests.test_pairwise_flow import truthful as pairwise_truthful
from tests.test_stage_declaration import WORD
from tests.test_stage_declaration import truthful as toy_truthful

pytestmark = pytest.mark.integration

MAIN = "7dd3df8"  # main when issue 49's house-keeping began


def answer(request: dict[str, Any]) -> str | Reply:
    """The toy's word length, or the truthful pairwise verdict (the endpoint check's request gets 'ok')."""
    content = str(request["messages"][-1]["content"])
    if WORD.search(content):
        return toy_truthful(request)
    if "[The Start of Passage" in content:
        return pairwise_truthful(request)
    return "ok"


def old_code(into: Path) -> Path:
    """The project as it was at MAIN (its code, SQL and tests: the toy stage), unpacked under `into`."""
    git = ["git", "-C", str(PROJECT_ROOT)]
    known = subprocess.run([*git, "cat-file", "-e", f"{MAIN}^{{commit}}"], capture_output=True)
    if known.returncode != 0:
        pytest.skip(f"needs main's history back to {MAIN} (a shallow clone or an export has none)")
    archive = subprocess.run(
        [
            "git",
            "-C",
            str(PROJECT_ROOT),
            "archive",
            MAIN,
            "peras",
            "tasks",
            "flows",
            "cli",
            "sql",
            "tests",
            "support",
            "expectations",
        ],
        capture_output=True,
        check=True,
    )
    into.mkdir()
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def peras(code: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`peras ARGS` of the code under `code`, in a process of its own."""
    run_env = {**env, "PYTHONPATH": str(code)}
    return subprocess.run(
        [sys.executable, "-m", "cli.main", *args], cwd=code, env=run_env, capture_output=True, text=True, timeout=600
    )


def listed(result: subprocess.CompletedProcess[str]) -> list[list[str]]:
    assert result.returncode == 0, result.stderr
    return sorted(line.split()[:5] for line in result.stdout.splitlines() if " fake-model " in line)  # the runs


def test_a_warehouse_made_by_main_opens_and_keeps_every_run(tmp_path):
    old = old_code(tmp_path / "old")
    warehouse = tmp_path / "peras.duckdb"
    env = {**os.environ, "PERAS_ENDPOINT_SLOTS_DIR": str(tmp_path / "slots"), "PERAS_STAGE_MODULES": "tests.toy_stage"}
    where = ["--warehouse", str(warehouse)]
    with FakeOpenAI(answer) as server:
        endpoint = ["--base-url", server.base_url, "--model", "fake-model"]
        pairwise = ["pairwise", "sample", "--pairs-per-topic", "1", "--personality", "default", *endpoint, *where]
        toy = ["ask", "toy", "--word", "cat", "--word", "horse", *endpoint, *where]
        for args in (["ingest", "sample", *where], pairwise, toy):
            made = peras(old, *args, env=env)
            assert made.returncode == 0, made.stderr
        asked_by_main = len(server.chat_requests)
        made_list = peras(old, "runs", "list", *where, env=env)
        before = listed(made_list)
        # this code: the same runs, resumed sending nothing
        assert listed(peras(PROJECT_ROOT, "runs", "list", *where, env=env)) == before
        for args in (pairwise, toy):
            again = peras(PROJECT_ROOT, *args, env=env)
            assert again.returncode == 0, again.stderr
        assert len(server.chat_requests) == asked_by_main
    assert [row[:2] for row in before] == [["pairwise", "sample-pairwise-fake-model"], ["toy", "toy"]]
    after = peras(PROJECT_ROOT, "runs", "list", *where, env=env)
    assert listed(after) == before and after.stdout == made_list.stdout  # every line as main printed it
    with open_migrated(warehouse) as con:
        assert con.execute("select count(*) from pairwise_accuracy").fetchall() == [(1,)]
        assert con.execute("select status, count(*) from toy_answers group by all").fetchall() == [("ok", 2)]
    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert con.execute("select count(*) from pairwise_answers where status = 'ok'").fetchall() == [(10,)]
