"""What a person sees while a long command works: stage lines, live counts on a terminal, lines in a log, a stop.

Each test runs `peras` in a new process as a user does, against the scripted server answering slowly enough for
the progress to show.
"""

from __future__ import annotations

import contextlib
import os
import pty
import re
import select
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from cli.prefect_server import LocalServer
from support.fake_openai import FakeOpenAI, Reply, instant
from support.prefect_server import free_port
from tests.conftest import SHARED_DATA

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[1]
ANSI = re.compile(r"\x1b\[[0-9;?]*[a-zA-Z]")
ESTIMATE_LINE = re.compile(r"^judge \S+: at the speed measured so far \(.+\), the \d+ items left take about .+$")
PROGRESS_LINE = re.compile(
    r"^judge (?P<run>\S+): (?P<items>\d+)/6 items; requests (?P<sent>\d+) asked, (?P<answered>\d+) answered, "
    r"(?P<failed>\d+) failed; [\d,.]+ items/min, ETA .+$"
)


def slow(delay_s: float):
    def respond(request: dict) -> Reply:
        return Reply(instant(request), delay_s=delay_s)

    return respond


@pytest.fixture
def sample_warehouse(tmp_path, ingested) -> Path:
    from peras.settings import load_settings

    settings = load_settings(warehouse=tmp_path / "peras.duckdb", data_dir=SHARED_DATA)
    ingested("sample", settings)
    return settings.warehouse


def judge_args(warehouse: Path, url: str) -> list[str]:
    """Six judgments (3 pairs x 1 personality x CoT on/off), two requests each, one at a time."""
    return [
        "judge", "sample", "--limit-pairs", "3", "--personality", "default", "--warehouse", str(warehouse),
        "--base-url", url, "--model", "fake-model", "--concurrency", "1",
    ]  # fmt: skip


def test_demo_on_a_terminal_shows_stage_lines_and_live_counts_before_it_ends(tmp_path):
    with FakeOpenAI(slow(0.01)) as server:  # the whole sample (the classifier needs every level): 880 judgments
        env = os.environ | {"COLUMNS": "160", "PERAS_PROGRESS_INTERVAL_S": "10"}
        args = ["demo", "--trials", "2", "--warehouse", str(tmp_path / "peras.duckdb")]
        args += ["--base-url", server.base_url, "--model", "fake-model"]
        main, child = pty.openpty()
        proc = subprocess.Popen(
            [sys.executable, "-m", "cli.main", *args], cwd=ROOT, env=env, stdin=child, stdout=child, stderr=child
        )
        os.close(child)
        seen, timeline = b"", []
        started = time.monotonic()
        while True:
            ready, _, _ = select.select([main], [], [], 1.0)
            if ready:
                try:
                    chunk = os.read(main, 65536)
                except OSError:  # the child closed the terminal
                    break
                if not chunk:
                    break
                seen += chunk
                timeline.append((time.monotonic() - started, chunk.decode(errors="replace")))
            elif proc.poll() is not None:
                break
        proc.wait(timeout=60)
        os.close(main)
    text = ANSI.sub("", seen.decode(errors="replace")).replace("\r", "\n")
    assert proc.returncode == 0, text[-3000:]
    lines = [line.strip() for line in text.splitlines()]
    ingest_at = next(i for i, line in enumerate(lines) if re.fullmatch(r"ingest: sample published \(.+ min in\)", line))
    counts_at = next(
        i for i, line in enumerate(lines) if re.search(r"requests \d+ asked, \d+ answered, 0 failed", line)
    )
    judged_at = next(
        i for i, line in enumerate(lines) if re.fullmatch(r"judge: \S+: 880 judgments \(.+ min in\)", line)
    )
    report_at = next(i for i, line in enumerate(lines) if line.startswith("report: ") and "min in)" in line)
    done_at = next(i for i, line in enumerate(lines) if line.startswith("done in "))
    # the stage lines come in order as each stage ends, the live counts during judging, all before the summary
    assert ingest_at < counts_at < judged_at < report_at < done_at
    assert "880/880" in text  # the bar ends full


def run_to_files(
    tmp_path: Path, args: list[str], env: dict[str, str], new_session: bool = False
) -> subprocess.Popen[bytes]:
    """`peras ARGS` with stdout and stderr to files, as in a log or CI (in a session of its own if `new_session`)."""
    out, err = (tmp_path / "out.txt").open("wb"), (tmp_path / "err.txt").open("wb")
    return subprocess.Popen(
        [sys.executable, "-m", "cli.main", *args],
        cwd=ROOT,
        env=env,
        stdout=out,
        stderr=err,
        start_new_session=new_session,
    )


def test_a_judge_writing_to_a_file_prints_a_progress_line_every_interval(tmp_path, sample_warehouse):
    with FakeOpenAI(slow(0.25)) as server:
        env = os.environ | {"PERAS_PROGRESS_INTERVAL_S": "0.5"}
        proc = run_to_files(tmp_path, judge_args(sample_warehouse, server.base_url), env)
        assert proc.wait(timeout=240) == 0, (tmp_path / "err.txt").read_text()
    lines = (tmp_path / "err.txt").read_text().splitlines()
    found = [m for line in lines if (m := PROGRESS_LINE.match(line))]
    assert len(found) >= 3, lines  # 12 requests of 0.25 s, one at a time: ~3 s, a line each 0.5 s
    # nothing else on stderr but, once, the estimate (said after 5% of the items and 10 answers)
    assert len(found) + sum(bool(ESTIMATE_LINE.match(line)) for line in lines) == len(lines), lines
    final = found[-1]
    # one confidence request is the same for two judgments: asked once, its answer reused
    assert (final["items"], final["sent"], final["answered"], final["failed"]) == ("6", "11", "11", "0")
    assert [int(m["items"]) for m in found] == sorted(int(m["items"]) for m in found)
    assert (tmp_path / "out.txt").read_text().startswith(f"{final['run']}: 6 judgments (6 new; 11 requests sent")
    # the Prefect progress artifact counts items and requests too
    con = duckdb.connect(str(sample_warehouse), read_only=True)
    try:
        (run_id,) = con.execute("select run_id from judge_runs where run_name = ?", [final["run"]]).fetchone()
    finally:
        con.close()
    (artifact,) = progress_artifacts(f"judge-progress-{run_id}")
    assert (artifact.data, artifact.description) == (
        100.0,
        f"judge run {final['run']}: 6 of 6 items done; requests 11 asked, 11 answered, 0 failed",
    )


def progress_artifacts(key: str) -> list:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    with get_client(sync_client=True) as client:
        return client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])))


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGINT])
def test_a_stopped_run_says_so_in_one_line_with_how_to_resume(tmp_path, sample_warehouse, how):
    with FakeOpenAI(slow(1.0)) as server:
        env = os.environ | {"PERAS_PROGRESS_INTERVAL_S": "0.5"}
        args = judge_args(sample_warehouse, server.base_url)
        proc = run_to_files(tmp_path, args, env)
        deadline = time.monotonic() + 180
        while not any(PROGRESS_LINE.match(line) for line in (tmp_path / "err.txt").read_text().splitlines()):
            assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "err.txt").read_text()
            time.sleep(0.2)
        proc.send_signal(how)
        code = proc.wait(timeout=120)
    lines = (tmp_path / "err.txt").read_text().splitlines()
    command = " ".join(["peras", *args])
    expected = {
        signal.SIGTERM: (143, f"stopped by SIGTERM: what was answered is kept; re-run `{command}` to resume"),
        signal.SIGINT: (130, f"interrupted (Ctrl-C): what was answered is kept; re-run `{command}` to resume"),
    }[how]
    assert (code, lines[-1]) == expected, lines
    # click ends the line first
    assert all(PROGRESS_LINE.match(line) or ESTIMATE_LINE.match(line) or line == "" for line in lines[:-1]), lines


def files_holding(root: Path, secret: bytes) -> list[Path]:
    """The files under `root` whose bytes contain `secret`."""
    return [path for path in root.rglob("*") if path.is_file() and secret in path.read_bytes()]


def test_a_stopped_run_resume_line_masks_the_password_of_its_base_url(tmp_path, sample_warehouse):
    # Issue 48, item 13: the resume line quoted the command line as typed, `user:PASSWORD@` included.
    password = "s3cret-Pa55word"
    with FakeOpenAI(slow(1.0)) as server:
        env = os.environ | {"PERAS_PROGRESS_INTERVAL_S": "0.5"}
        url = server.base_url.replace("http://", f"http://peras:{password}@")
        args = judge_args(sample_warehouse, url)
        proc = run_to_files(tmp_path, args, env)
        deadline = time.monotonic() + 180
        while not any(PROGRESS_LINE.match(line) for line in (tmp_path / "err.txt").read_text().splitlines()):
            assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "err.txt").read_text()
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=120)
    lines = (tmp_path / "err.txt").read_text().splitlines()
    masked = " ".join(["peras", *args]).replace(password, "***")
    assert (code, lines[-1]) == (143, f"stopped by SIGTERM: what was answered is kept; re-run `{masked}` to resume")
    # nowhere: not on the terminal, in the warehouse, its shards and snapshot, nor in Prefect's database and logs
    assert files_holding(tmp_path, password.encode()) == []
    assert files_holding(Path(os.environ["PREFECT_HOME"]), password.encode()) == []


def session_processes(session: int) -> list[str]:
    """The command lines of the live processes of a session (what a command started and did not detach)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
            if entry.name.isdigit() and int(stat[stat.rindex(")") + 2 :].split()[3]) == session:
                found.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except (OSError, ValueError):
            continue  # gone meanwhile
    return found


# How the command finds its Prefect server: the local server peras starts (and keeps, in a session of its own),
# Prefect's temporary one in the command's process (PERAS_PREFECT_SERVER=ephemeral), the user's PREFECT_API_URL.
MODES = ["local", "ephemeral", "api-url"]


@pytest.mark.parametrize("mode", MODES)
def test_no_process_of_a_command_outlives_it_and_its_progress_artifact_is_on_its_server(
    tmp_path, sample_warehouse, prefect_server, mode
):
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"} | {
        "PREFECT_HOME": str(tmp_path / "client-home"),
        "PERAS_PREFECT_HOME": str(tmp_path / "server-home"),
        "PERAS_PREFECT_PORT": str(free_port()),
        "PERAS_PROGRESS_INTERVAL_S": "1",  # the run (11 requests of 1 s) takes several intervals
        # a loaded machine, where Prefect's temporary server does not answer in time (20 s by default): each progress
        # tick started one (a thread without the command's settings) and left it running (issue 48 item 7)
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "0",
    }
    env |= {"ephemeral": {"PERAS_PREFECT_SERVER": "ephemeral"}, "api-url": {"PREFECT_API_URL": prefect_server}}.get(
        mode, {}
    )
    local = LocalServer(Path(env["PERAS_PREFECT_HOME"]), int(env["PERAS_PREFECT_PORT"]))
    proc = None
    try:
        with FakeOpenAI(slow(1.0)) as server:
            proc = run_to_files(tmp_path, judge_args(sample_warehouse, server.base_url), env, new_session=True)
            assert proc.wait(timeout=400) == 0, (tmp_path / "err.txt").read_text()
        deadline = time.monotonic() + 10  # a child told to stop as the command ended may take a moment
        while session_processes(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert session_processes(proc.pid) == []
        run = (tmp_path / "out.txt").read_text().split(":")[0]
        key = f"judge-progress-{run_id_of(sample_warehouse, run)}"
        assert artifacts_of(mode, key, local.url if mode == "local" else prefect_server, tmp_path) == [
            (100.0, f"judge run {run}: 6 of 6 items done; requests 11 asked, 11 answered, 0 failed")
        ]
    finally:
        if proc is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # what the command left, if anything
        local.stop()


def run_id_of(warehouse: Path, run: str) -> str:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return con.execute("select run_id from judge_runs where run_name = ?", [run]).fetchone()[0]
    finally:
        con.close()


def artifacts_of(mode: str, key: str, url: str, tmp_path: Path) -> list[tuple[float, str]]:
    """(progress, description) of the artifacts with this key on the server the command ran its flows on."""
    from prefect.settings import PREFECT_API_URL, temporary_settings

    if mode == "ephemeral":  # the command's temporary server ended with it: its database is in the Prefect home
        with contextlib.closing(sqlite3.connect(tmp_path / "client-home" / "prefect.db")) as db:
            found = db.execute("select data, description from artifact where key = ?", [key]).fetchall()
        return [(float(data), description) for data, description in found]
    with temporary_settings(updates={PREFECT_API_URL: url}):
        return [(artifact.data, artifact.description) for artifact in progress_artifacts(key)]


def test_a_command_whose_prefect_server_is_stopped_while_it_asks_ends_in_one_line(tmp_path, sample_warehouse):
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"} | {
        "PREFECT_HOME": str(tmp_path / "client-home"),
        "PERAS_PREFECT_HOME": str(tmp_path / "server-home"),
        "PERAS_PREFECT_PORT": str(free_port()),
        "PERAS_PROGRESS_INTERVAL_S": "0.5",
    }
    local = LocalServer(Path(env["PERAS_PREFECT_HOME"]), int(env["PERAS_PREFECT_PORT"]))
    proc = None
    try:
        with FakeOpenAI(slow(2.0)) as server:  # 11 requests of 2 s, one at a time
            args = judge_args(sample_warehouse, server.base_url)
            proc = run_to_files(tmp_path, args, env, new_session=True)  # it starts the local server
            deadline = time.monotonic() + 300
            while not any(PROGRESS_LINE.match(line) for line in (tmp_path / "err.txt").read_text().splitlines()):
                assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "err.txt").read_text()
                time.sleep(0.2)
            stopped = subprocess.run(
                [sys.executable, "-m", "cli.main", "server", "stop"], cwd=ROOT, env=env, capture_output=True, text=True
            )
            assert stopped.stdout == f"stopped: {local.url}\n", stopped.stderr
            code = proc.wait(timeout=120)  # Prefect's retries held it for 10 minutes
        assert session_processes(proc.pid) == []
    finally:
        if proc is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        local.stop()
    lines = (tmp_path / "err.txt").read_text().splitlines()
    assert (code, lines[-1]) == (
        1,
        f"error: the Prefect server at {local.url} went away during the command (nothing listens there now): what "
        "was answered is kept in the warehouse (`peras runs list` says whether the run was published); start it "
        f"again (`peras server start`), then re-run `{' '.join(['peras', *args])}` to resume",
    ), lines
    # nothing else (Prefect's "Error logging to API" among them); click ends the line first
    assert all(PROGRESS_LINE.match(line) or ESTIMATE_LINE.match(line) or line == "" for line in lines[2:-1]), lines
