"""Errors the user or the machine causes: one capped line on stderr, the path named, nothing half-written."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from flows.ingest import ingest
from peras.errors import one_line
from peras.paths import SAMPLE_DIR
from tests.helpers import run_cli, snapshot

PERAS = Path(sys.executable).with_name("peras")


def user_files(tmp_path: Path, qrels: str) -> list[str]:
    """`peras ingest` arguments for the sample's queries and passages with the given qrels text."""
    path = tmp_path / "qrels.txt"
    path.write_text(qrels)
    return [
        "--name",
        "mine",
        "--qrels",
        str(path),
        "--queries",
        str(SAMPLE_DIR / "queries.tsv"),
        "--passages",
        str(SAMPLE_DIR / "passages.jsonl"),
    ]


@pytest.mark.integration
def test_huge_token_shows_its_start_length_and_line(capsys, settings, tmp_path):
    # a 3,000,000-character label: the message quotes 80 of them (it used to quote them all)
    args = user_files(tmp_path, "s1 0 e1 3\ns1 0 e2 " + "7" * 3_000_000 + "\n")
    result = run_cli(capsys, "ingest", *args, "--warehouse", str(settings.warehouse))
    assert (result.exit_code, result.err) == (
        1,
        f"error: {tmp_path / 'qrels.txt'}:2: relevance '{'7' * 80}'... (3,000,000 characters) is not an integer\n",
    )


@pytest.mark.integration
def test_huge_id_is_clipped_where_the_stage_quotes_it(capsys, settings, tmp_path):
    # a 3,000,000-character passage id passes the reader; the stage's own message quotes 80 characters of it
    args = user_files(tmp_path, "s1 0 e1 3\ns1 0 " + "p" * 3_000_000 + " 2\n")
    result = run_cli(capsys, "ingest", *args, "--warehouse", str(settings.warehouse))
    clipped = f"{'p' * 80}... (3,000,000 characters)"
    assert (result.exit_code, result.err) == (
        1,
        f"error: {tmp_path / 'qrels.txt'}:2: passage {clipped} is judged but has no text in "
        f"{SAMPLE_DIR / 'passages.jsonl'} (1 pairs, 1 passages without text, e.g. {clipped})\n",
    )


@pytest.mark.core
@pytest.mark.parametrize(
    ("message", "line"),
    [
        # the last guard, for a message that still quotes a huge value whole: 2,000 characters, the rest counted
        ("x" * 3_000_000, "x" * 2_000 + "... (2,998,000 more characters)"),
        # a multi-line message (a traceback-like text) is joined into one line
        ("first\n  second\n\nthird", "first second third"),
    ],
)
def test_any_error_line_is_capped_at_2000_characters(message, line):
    assert one_line(message) == line


@pytest.mark.core
@pytest.mark.parametrize(
    ("text", "masked"),
    [
        # a base URL's password (issue 48, item 13: the resume line showed it), the user name kept
        ("--base-url http://peras:s3cret@gpu:8000/v1 --model m", "--base-url http://peras:***@gpu:8000/v1 --model m"),
        # a lone user name is a token: masked whole
        ("cannot reach https://sk-token@api.example.com/v1", "cannot reach https://***@api.example.com/v1"),
        # a password holding '@' is masked up to the host
        ("http://u:p@ss@h:1/a?x=1@2", "http://u:***@h:1/a?x=1@2"),
        # an '@' in a path, a query or a mail address is no userinfo
        ("see http://host/a@b and me@x.com", "see http://host/a@b and me@x.com"),
    ],
)
def test_a_password_in_a_url_is_masked_in_every_message(text, masked):
    from peras.errors import mask_secrets

    assert mask_secrets(text) == masked


@pytest.mark.core
def test_the_resume_line_masks_the_passwords_of_the_command_line(monkeypatch):
    from cli.main import this_command

    lake = "ducklake:postgres:dbname=peras host=db password=hunter22"
    url = "http://peras:s3cret@gpu:8000/v1"
    monkeypatch.setattr(sys, "argv", ["peras", "judge", "sample", "--warehouse", lake, "--base-url", url])
    assert this_command() == (
        "peras judge sample --warehouse 'ducklake:postgres:dbname=peras host=db password=***' --base-url "
        "http://peras:***@gpu:8000/v1"
    )


NOT_DUCKDB = [
    # reading
    ["sql", "select 1"],
    ["export", "qrels", "--output", "{tmp}/qrels.csv"],
    ["metrics"],
    # writing
    ["ingest", "sample"],
]


@pytest.mark.integration
@pytest.mark.parametrize("command", NOT_DUCKDB, ids=lambda command: command[0])
def test_not_a_duckdb_file_is_one_line_and_left_alone(capsys, tmp_path, command):
    warehouse = tmp_path / "notes.duckdb"
    warehouse.write_text("these are my notes, not a warehouse\n" * 100)
    before = warehouse.read_bytes()
    args = [part.format(tmp=tmp_path) for part in command]
    result = run_cli(capsys, *args, "--warehouse", str(warehouse))
    assert (result.exit_code, result.err) == (
        2,
        f"error: {warehouse} is not a DuckDB database: point --warehouse (or PERAS_WAREHOUSE) at the warehouse file\n",
    )
    assert warehouse.read_bytes() == before


@contextlib.contextmanager
def unwritable(path: Path) -> Iterator[None]:
    """Make `path` read-only for this process: chmod, and for root (whom chmod does not stop) chattr +i."""
    mode = path.stat().st_mode
    path.chmod(0o444)
    immutable = False
    try:
        if os.geteuid() == 0:
            chattr = shutil.which("chattr")
            if chattr is None or subprocess.run([chattr, "+i", str(path)], capture_output=True).returncode != 0:
                pytest.skip("running as root on a file system without chattr +i: cannot make a file read-only")
            immutable = True
        yield
    finally:
        if immutable:
            subprocess.run([shutil.which("chattr") or "chattr", "-i", str(path)], check=True)
        path.chmod(mode)


@pytest.mark.integration
def test_read_only_warehouse_refuses_a_writer_in_one_line(capsys, settings, ingested):
    ingested("sample", settings)
    before = snapshot(settings.warehouse)
    with unwritable(settings.warehouse):
        result = run_cli(capsys, "ingest", "sample", "--force", "--warehouse", str(settings.warehouse))
    assert result.exit_code == 2 and result.err.count("\n") == 1
    assert result.err.startswith(f"error: cannot write the warehouse {settings.warehouse} (")
    assert "point --warehouse at a" in result.err
    assert snapshot(settings.warehouse) == before


READERS = [
    # the CSV of one view
    (["metrics", "--format", "csv", "--view", "agreement"], "run_id,run_name,"),
    # the HTML page and its figures, written beside the warehouse (not into it)
    (["report", "--output", "{tmp}/report"], "wrote {tmp}/report/report.html ("),
]


@pytest.mark.integration
@pytest.mark.parametrize(("command", "start"), READERS, ids=["metrics", "report"])
def test_metrics_and_report_read_a_read_only_warehouse(capsys, settings, tmp_path, command, start, ingested):
    ingested("sample", settings)
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
    assert imported.exit_code == 0
    before = snapshot(settings.warehouse)
    args = [part.format(tmp=tmp_path) for part in command]
    with unwritable(settings.warehouse):
        result = run_cli(capsys, *args, "--warehouse", str(settings.warehouse))
    assert (result.exit_code, result.err) == (0, "")
    assert result.out.startswith(start.format(tmp=tmp_path))
    assert snapshot(settings.warehouse) == before


FAILING = [
    # a usage error raised after the stage has used (and closed) a DuckDB connection
    ["metrics", "--run", "nope"],
    ["import-judgments", "{tmp}/run.txt", "--name", "r", "--collection", "nope"],
]


@pytest.mark.integration
@pytest.mark.parametrize("command", FAILING, ids=lambda command: command[0])
def test_failed_command_prints_exactly_one_line(settings, tmp_path, command, ingested):
    # a real process: the "nanobind: leaked ..." report came at interpreter exit, after the error line
    ingested("sample", settings)
    (tmp_path / "run.txt").write_text("s1 0 e1 3\n")
    args = [part.format(tmp=tmp_path) for part in command]
    done = subprocess.run(
        [str(PERAS), *args, "--warehouse", str(settings.warehouse)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 2
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, done.stderr[:500]


@contextlib.contextmanager
def small_disk(directory: Path, size: str) -> Iterator[Path]:
    """A tmpfs of `size` mounted on `directory` (root only; skipped where mounting is not allowed)."""
    directory.mkdir()
    mount = shutil.which("mount")
    if os.geteuid() != 0 or mount is None:
        pytest.skip("a full disk needs a small tmpfs: root only")
    if subprocess.run([mount, "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(directory)]).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield directory
    finally:
        subprocess.run([shutil.which("umount") or "umount", str(directory)], check=True)


@pytest.mark.integration
def test_full_disk_is_one_line_naming_the_file(capsys, tmp_path):
    with small_disk(tmp_path / "full", "1M") as disk:
        result = run_cli(capsys, "ingest", "sample", "--warehouse", str(disk / "peras.duckdb"))
    assert result.exit_code == 1 and result.err.count("\n") == 1
    assert result.err.startswith("error: ") and f'"{tmp_path / "full"}/peras.duckdb' in result.err
    assert result.err.endswith("No space left on device: free some space and run the same command again\n")


def test_an_api_key_a_server_echoes_is_masked_in_everything_the_run_leaves(capsys, settings, tmp_path, monkeypatch):
    from prefect.client.orchestration import get_client

    from support.fake_openai import FakeOpenAI, Fault
    from tests.conftest import drain_prefect_workers

    key = f"sk-peras-{uuid.uuid4().hex}"
    monkeypatch.setenv("PERAS_TEST_API_KEY", key)
    monkeypatch.setenv("PERAS_ENDPOINT_SLOTS_DIR", str(tmp_path / "slots"))
    ingest(preset="sample", settings=settings)
    warehouse = ["--warehouse", str(settings.warehouse)]
    endpoint = ["--model", "fake-model", "--api-key-env", "PERAS_TEST_API_KEY"]
    with FakeOpenAI(lambda request: Fault(401, echo_key=True)) as server:  # a LiteLLM proxy that knows no such key
        result = run_cli(capsys, "pairwise", "sample", "--run-name", "leaky", "--base-url", server.base_url, *endpoint,
                         *warehouse)  # fmt: skip
        sent = {r.headers["authorization"] for r in server.chat_requests}
    report = run_cli(capsys, "report", "--output", str(tmp_path / "report"), *warehouse)
    drain_prefect_workers()  # every log line the runs shipped is on the server now
    assert sent == {f"Bearer {key}"}  # the server did get the key, and quoted it back
    reason = (
        f"{server.base_url} rejected the request: HTTP 401: Authentication Error, Invalid proxy server token passed. "
        "Received API Key = ***, Key Hash (Token) =0f1e2d3c. Unable to find token in cache or "
        "`LiteLLM_VerificationTokenTable` (the API key comes from $PERAS_TEST_API_KEY, which is set)"
    )
    assert (result.exit_code, result.out) == (1, "")
    assert result.err.endswith(f"{reason}\n"), result.err
    con = duckdb.connect(str(settings.warehouse), read_only=True)
    try:
        assert con.execute("select status, status_reason from pairwise_runs").fetchall() == [
            ("failed", f"BackendError: {reason}")
        ]
    finally:
        con.close()
    printed = [result.out, result.err, report.out, report.err]
    assert [text for text in printed if key in text] == []
    # every file: warehouse, analysts' snapshot, shards, reports, logs; and Prefect's own home (its database, logs)
    files = [*tmp_path.rglob("*"), *Path(os.environ["PREFECT_HOME"]).rglob("*")]
    assert [str(path) for path in files if path.is_file() and key.encode() in path.read_bytes()] == []
    with get_client(sync_client=True) as client:  # and what the API serves: flow runs' states, logs, artifacts
        served = [client.read_flow_runs(limit=200), client.read_logs(limit=200), client.read_artifacts(limit=200)]
    assert key not in repr(served)
