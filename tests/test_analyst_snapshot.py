"""The analysts' snapshot: analysts never block a stage, stages never block analysts, a held lock is one line."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from flows.ingest import ingest
from peras.paths import SAMPLE_DIR
from peras.warehouse import open_migrated, publish_snapshot, snapshot_is_current, snapshot_path
from tests.helpers import run_cli, snapshot

pytestmark = pytest.mark.integration

# An analyst's notebook: one read-only connection kept open; each line on stdin asks it to report on that
# connection, then to reconnect and report again.
ANALYST = """
import sys, duckdb
path = sys.argv[1]
def counts(con):
    return con.execute("select (select count(*) from collections), (select count(*) from judge_runs)").fetchone()
con = duckdb.connect(path, read_only=True)
print(*counts(con), flush=True)
for _ in sys.stdin:
    print(*counts(con), flush=True)
    con.close()
    con = duckdb.connect(path, read_only=True)
    print(*counts(con), flush=True)
"""

# Another process holding the warehouse open for writing until its stdin closes.
HOLDER = """
import sys, duckdb
con = duckdb.connect(sys.argv[1])
print("locked", flush=True)
sys.stdin.read()
"""


def start(script: str, path: Path) -> tuple[subprocess.Popen[str], str]:
    """Run `script` on `path` in another process; return it and its first line."""
    proc = subprocess.Popen(
        [sys.executable, "-c", script, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def ingest_sample(capsys, settings):
    result = run_cli(capsys, "ingest", "sample", "--warehouse", str(settings.warehouse))
    assert result.exit_code == 0, result.err


def test_analyst_on_the_snapshot_blocks_neither_ingest_nor_import(capsys, settings, tmp_path):
    ingest_sample(capsys, settings)
    analyst, first = start(ANALYST, snapshot_path(settings.warehouse))
    try:
        assert first == "1 0"
        mine = run_cli(
            capsys,
            "ingest",
            "--name",
            "mine",
            "--qrels",
            str(SAMPLE_DIR / "qrels.txt"),
            "--queries",
            str(SAMPLE_DIR / "queries.tsv"),
            "--passages",
            str(SAMPLE_DIR / "passages.jsonl"),
            "--warehouse",
            str(settings.warehouse),
        )
        assert (mine.exit_code, mine.err) == (0, "")
        run = tmp_path / "run.txt"
        run.write_text("s1 0 e1 3\ns1 0 e2 2\n")
        imported = run_cli(
            capsys,
            "import-judgments",
            str(run),
            "--name",
            "r",
            "--collection",
            "sample",
            "--warehouse",
            str(settings.warehouse),
        )
        assert (imported.exit_code, imported.err) == (0, "")
        assert analyst.stdin is not None and analyst.stdout is not None
        analyst.stdin.write("report\n")
        analyst.stdin.flush()
        # the open connection keeps the snapshot it opened; a new one sees both stages' data
        assert [analyst.stdout.readline().strip() for _ in range(2)] == ["1 0", "2 1"]
    finally:
        analyst.kill()
        analyst.wait()
    assert snapshot_is_current(settings.warehouse)


def test_lock_held_past_the_wait_is_one_line_naming_the_holder(capsys, settings, monkeypatch):
    ingest_sample(capsys, settings)
    before = snapshot(snapshot_path(settings.warehouse))
    monkeypatch.setattr("peras.warehouse.LOCK_WAIT_S", 1.0)
    holder, first = start(HOLDER, settings.warehouse)
    try:
        assert first == "locked"
        result = run_cli(capsys, "ingest", "sample", "--force", "--warehouse", str(settings.warehouse))
    finally:
        holder.communicate("")
    assert result.exit_code == 2 and result.err.count("\n") == 1
    assert result.err.startswith(f"error: the warehouse {settings.warehouse} is locked by ")
    assert f"(PID {holder.pid}), still after 1 s: " in result.err
    assert "close its connection (even a read-only one blocks every stage)" in result.err
    assert f"read the analysts' snapshot {snapshot_path(settings.warehouse)} instead" in result.err
    assert snapshot(snapshot_path(settings.warehouse)) == before


def test_sql_answers_from_the_snapshot_while_a_writer_holds_the_warehouse(capsys, settings):
    ingest_sample(capsys, settings)
    holder, first = start(HOLDER, settings.warehouse)
    try:
        assert first == "locked"
        started = time.monotonic()
        result = run_cli(
            capsys, "sql", "select count(*) as n from qrels", "--format", "csv", "--warehouse", str(settings.warehouse)
        )
        took = time.monotonic() - started
    finally:
        holder.communicate("")
    assert (result.exit_code, result.out, result.err) == (0, "n\n40\n", "")
    assert took < 5  # no waiting for the lock


def test_sql_reads_the_warehouse_when_the_snapshot_is_behind(capsys, settings):
    ingest_sample(capsys, settings)
    with open_migrated(settings.warehouse) as con:  # a write that published no snapshot
        con.execute("insert into queries values ('sample', 'q-new', 'a query written behind the snapshot')")
    assert not snapshot_is_current(settings.warehouse)
    result = run_cli(
        capsys, "sql", "select count(*) as n from queries", "--format", "csv", "--warehouse", str(settings.warehouse)
    )
    assert (result.exit_code, result.out) == (0, "n\n6\n")


def test_mid_run_refreshes_are_throttled_end_of_stage_ones_are_not(settings):
    ingest(preset="sample", settings=settings)
    settings.analyst_snapshot_interval_s = 3600
    with open_migrated(settings.warehouse) as con:
        con.execute("insert into queries values ('sample', 'q-new', 'progress')")
    assert publish_snapshot(settings, throttled=True) is None  # the snapshot is seconds old
    assert not snapshot_is_current(settings.warehouse)
    assert publish_snapshot(settings) == snapshot_path(settings.warehouse)
    assert snapshot_is_current(settings.warehouse)
    settings.analyst_snapshot_interval_s = 0
    with open_migrated(settings.warehouse) as con:
        con.execute("delete from queries where query_id = 'q-new'")
    assert publish_snapshot(settings, throttled=True) == snapshot_path(settings.warehouse)
    assert snapshot_is_current(settings.warehouse)


def test_a_snapshot_that_cannot_be_written_never_fails_the_stage(capsys, settings):
    # something else sits where the snapshot goes: the stage publishes all the same
    (snapshot_path(settings.warehouse) / "in-the-way").mkdir(parents=True)
    ingest_sample(capsys, settings)
    result = run_cli(
        capsys, "sql", "select count(*) as n from qrels", "--format", "csv", "--warehouse", str(settings.warehouse)
    )
    assert (result.exit_code, result.out) == (0, "n\n40\n")
    assert not any(path.name.endswith(".tmp") for path in settings.warehouse.parent.iterdir())


def test_no_snapshot_when_the_setting_is_off(capsys, settings, monkeypatch):
    monkeypatch.setenv("PERAS_ANALYST_SNAPSHOT", "false")
    ingest_sample(capsys, settings)
    assert settings.warehouse.exists() and not snapshot_path(settings.warehouse).exists()


def test_an_analyst_connection_open_during_a_judge_run_blocks_nothing(capsys, settings):
    # The analyst keeps a notebook connection open on the snapshot for the whole run; the run loads its shards,
    # publishes, refreshes the snapshot; the analyst sees the run after reconnecting.
    from flows.judge import judge
    from support.fake_openai import FakeOpenAI, instant

    ingest_sample(capsys, settings)
    analyst, first = start(ANALYST, snapshot_path(settings.warehouse))
    assert first == "1 0"
    try:
        with FakeOpenAI(instant) as server:
            settings.base_urls, settings.model = [server.base_url], "fake-model"
            result = judge(
                collection="sample",
                personalities=["default"],
                cot=[False],
                limit_pairs=5,
                chunk_size=2,
                settings=settings,
            )
        assert result["n_planned"] == 5
        assert analyst.stdin is not None and analyst.stdout is not None
        analyst.stdin.write("\n")
        analyst.stdin.flush()
        assert [analyst.stdout.readline().strip() for _ in range(2)] == ["1 0", "1 1"]
    finally:
        analyst.kill()
        analyst.wait()


def test_a_run_s_first_mid_run_refresh_waits_an_interval_from_when_its_asking_began(settings, monkeypatch):
    """tasks/engine/tasks.py shard_loaded: a run shorter than the interval copies the warehouse once, as it ends."""
    from types import SimpleNamespace

    from tasks.engine.spec import EngineStats
    from tasks.engine.tasks import shard_loaded

    ingest(preset="sample", settings=settings)
    snapshot_path(settings.warehouse).unlink()  # no snapshot at all: an unthrottled refresh would write one
    progress = SimpleNamespace(started=time.monotonic(), update=lambda stats: None)  # no Prefect artifact here
    settings.analyst_snapshot_interval_s = 60
    shard_loaded(settings, progress, EngineStats())
    assert not snapshot_path(settings.warehouse).exists()
    monkeypatch.setattr(progress, "started", time.monotonic() - 61)  # an interval after the asking began
    shard_loaded(settings, progress, EngineStats())
    assert snapshot_is_current(settings.warehouse)
