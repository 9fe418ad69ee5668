"""What a command costs before it does anything: the reusable local Prefect server, the temporary one, imports."""

from __future__ import annotations

import contextlib
import http.server
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from cli.prefect_server import LocalServer
from support.prefect_server import free_port
from tests.helpers import run_cli

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_LINE = "sample: 40 judged pairs, 5 queries, 40 passages; balanced subset 5 topics / 40 pairs\n"


def peras(env: dict[str, str], *args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    """`peras ARGS` in a new process, as a user runs it; and how long it took."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "cli.main", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    return done, time.monotonic() - started


@pytest.fixture
def no_server_env(tmp_path: Path) -> dict[str, str]:
    """A user's environment: no PREFECT_API_URL, the local server's home and port private to this test."""
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env |= {
        "PREFECT_HOME": str(tmp_path / "client-home"),
        "PERAS_PREFECT_HOME": str(tmp_path / "server-home"),
        "PERAS_PREFECT_PORT": str(free_port()),
    }
    return env


@pytest.fixture
def local_server(no_server_env: dict[str, str]) -> Iterator[LocalServer]:
    server = LocalServer(Path(no_server_env["PERAS_PREFECT_HOME"]), int(no_server_env["PERAS_PREFECT_PORT"]))
    yield server
    server.stop()


@pytest.mark.integration
def test_first_command_starts_the_local_server_and_the_next_ones_reuse_it(no_server_env, local_server, tmp_path):
    # a cluster's proxy (here one that answers nothing) must not take Prefect's loopback traffic
    no_server_env |= {"HTTP_PROXY": f"http://127.0.0.1:{free_port()}", "NO_PROXY": "gpu-host"}
    warehouse = str(tmp_path / "peras.duckdb")
    url = local_server.url
    status, _ = peras(no_server_env, "server", "status")
    assert status.stdout == (
        f"not running: the next command that runs a flow starts it on {url} (home {local_server.home})\n"
    )

    first, first_s = peras(no_server_env, "ingest", "sample", "--warehouse", warehouse)
    assert first.returncode == 0, first.stderr
    assert first.stdout == SAMPLE_LINE
    assert first.stderr.startswith(f"starting the local Prefect server on {local_server.ui_url} (once;")
    assert local_server.healthy()  # still running after the command ended

    second, second_s = peras(no_server_env, "ingest", "sample", "--warehouse", warehouse)
    assert second.returncode == 0, second.stderr
    assert (second.stdout, second.stderr) == ("sample: unchanged (same files already ingested)\n", "")

    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: url}), get_client(sync_client=True) as client:
        runs = client.read_flow_runs()
    assert (
        sorted((r.name, r.state_name, tuple(sorted(r.tags))) for r in runs)
        == [("ingest-sample", "Completed", ("collection:sample", "peras", "stage:ingest"))] * 2
    )

    status, _ = peras(no_server_env, "server", "status")
    assert status.stdout.startswith(f"running: {url} (pid {local_server.pid()}; UI {local_server.ui_url};")
    stop, _ = peras(no_server_env, "server", "stop")
    assert stop.stdout == f"stopped: {url}\n"
    assert not local_server.healthy()
    print(f"\ningest sample: {first_s:.1f} s starting the server, {second_s:.1f} s reusing it")


@pytest.mark.integration
def test_server_start_then_start_again_is_a_no_op(no_server_env, local_server):
    started, _ = peras(no_server_env, "server", "start")
    assert started.returncode == 0, started.stderr
    assert started.stdout == (
        f"started: {local_server.url} (UI {local_server.ui_url}; log {local_server.log})\n"
        f"for prefect commands and workers: export PREFECT_API_URL={local_server.url}\n"
    )
    again, again_s = peras(no_server_env, "server", "start")
    assert again.stdout.startswith(f"already running: {local_server.url}") and again.stderr == ""
    assert again_s < 10


@pytest.mark.integration
def test_a_temporary_server_that_times_out_is_retried_once_with_a_longer_timeout(no_server_env, tmp_path):
    env = no_server_env | {"PERAS_PREFECT_SERVER": "ephemeral", "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "0"}
    done, _ = peras(env, "ingest", "sample", "--warehouse", str(tmp_path / "peras.duckdb"))
    assert done.returncode == 0, done.stderr
    assert done.stdout == SAMPLE_LINE
    assert done.stderr.splitlines()[0] == (
        "the temporary Prefect server did not answer within 0 s (a loaded machine?); retrying with 90 s"
    )
    assert not Path(env["PERAS_PREFECT_HOME"]).exists()  # ephemeral: the local server was left alone


@pytest.mark.core
def test_a_temporary_server_that_never_starts_is_one_line_saying_what_to_do(capsys, monkeypatch, tmp_path):
    from prefect.server.api.server import SubprocessASGIServer
    from prefect.settings import (
        PREFECT_API_URL,
        PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS,
        temporary_settings,
    )

    def never(self, timeout=None):
        raise RuntimeError("Timed out while attempting to connect to ephemeral Prefect API server.")

    monkeypatch.setattr(SubprocessASGIServer, "start", never)
    monkeypatch.setenv("PERAS_PREFECT_SERVER", "ephemeral")
    monkeypatch.delenv("PREFECT_API_URL")
    with temporary_settings(
        updates={PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS: 20}, restore_defaults={PREFECT_API_URL}
    ):
        result = run_cli(capsys, "ingest", "sample", "--warehouse", str(tmp_path / "peras.duckdb"))
    assert (result.exit_code, result.out) == (1, "")
    assert result.err == (
        "the temporary Prefect server did not answer within 20 s (a loaded machine?); retrying with 90 s\n"
        "error: the temporary Prefect server did not start within 90 s: start the reusable local server with "
        "`peras server start` (or unset PERAS_PREFECT_SERVER), or set PREFECT_API_URL to a running server, "
        "then re-run\n"
    )
    assert not (tmp_path / "peras.duckdb").exists()


@pytest.mark.core
def test_a_bad_server_setting_is_a_usage_error(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("PERAS_PREFECT_PORT", "http")
    result = run_cli(capsys, "server", "status")
    assert (result.exit_code, result.err) == (2, "error: bad setting PERAS_PREFECT_PORT='http': a TCP port number\n")


# What importing costs: the commands below must not load the heavy libraries (Prefect ~1 s, sklearn ~1 s).
CHEAP = [
    ["--help"],
    ["server", "status"],
    ["runs", "list"],
    ["subsets"],
]
HEAVY = ["prefect", "sklearn", "great_expectations", "matplotlib"]


@pytest.mark.core
@pytest.mark.parametrize("args", CHEAP, ids=" ".join)
def test_cheap_commands_do_not_import_prefect_or_sklearn(args, tmp_path):
    code = (
        "import sys\n"
        f"sys.argv = ['peras', *{args!r}, *(['--warehouse', {str(tmp_path / 'w.duckdb')!r}] "
        f"if {args!r}[0] in ('runs', 'subsets') else [])]\n"
        "from cli.main import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.stdout.splitlines()[-1] == "[]", done.stdout + done.stderr


@pytest.mark.core
def test_help_does_not_import_polars():
    code = "import sys\nimport cli.main\nprint('polars' in sys.modules)\n"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "False"


@pytest.mark.integration
def test_status_of_a_server_peras_did_not_start(no_server_env, prefect_server):
    port = httpx.URL(prefect_server).port
    env = no_server_env | {"PERAS_PREFECT_PORT": str(port)}
    status, _ = peras(env, "server", "status")
    assert status.stdout.startswith(f"running: {prefect_server} (not started by peras;")
    stop, _ = peras(env, "server", "stop")
    assert (
        stop.stdout == f"not stopped: the server on {prefect_server} was not started by peras (stop it where it runs)\n"
    )


@pytest.mark.integration
def test_status_says_when_prefect_api_url_takes_precedence(capsys, monkeypatch, tmp_path, prefect_server):
    port = free_port()
    monkeypatch.setenv("PERAS_PREFECT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PERAS_PREFECT_PORT", str(port))
    result = run_cli(capsys, "server", "status")
    assert (result.exit_code, result.out) == (
        0,
        f"not running: the next command that runs a flow starts it on http://127.0.0.1:{port}/api "
        f"(home {tmp_path / 'home'})\n"
        f"PREFECT_API_URL is set: commands run their flows on {prefect_server} instead\n",
    )


@pytest.mark.integration
def test_a_server_peras_did_not_start_is_not_used_and_everything_names_peras_own(no_server_env, prefect_server):
    # the session's server stands for another user's on the port peras is told to use
    taken = httpx.URL(prefect_server).port
    env = no_server_env | {"PERAS_PREFECT_PORT": str(taken)}
    home = Path(env["PERAS_PREFECT_HOME"])
    started, _ = peras(env, "server", "start")
    assert started.returncode == 0, started.stderr
    moved = re.fullmatch(
        rf"port {taken} is taken by a Prefect server peras did not start \(its runs are not yours\): using port "
        rf"(\d+) instead \(set PERAS_PREFECT_PORT to choose one, or PREFECT_API_URL=http://127.0.0.1:{taken}/api "
        r"to use that server\)",
        started.stderr.splitlines()[0],
    )
    assert moved is not None, started.stderr
    own = LocalServer(home, int(moved[1]))
    try:
        assert started.stdout.startswith(f"started: {own.url} (UI {own.ui_url};")
        # the UI calls its own server's API, not Prefect's default port
        ui_settings = httpx.get(f"{own.ui_url}/ui-settings", timeout=10, trust_env=False).json()
        assert ui_settings["api_url"] == own.url
        status, _ = peras(env, "server", "status")
        assert status.stdout.startswith(f"running: {own.url} (pid {own.pid()};")
        # deploy uses the same local server as every other command, and says so
        theirs = deployments(prefect_server)
        deployed, _ = peras(env, "deploy", "--name", "ingest/sample")
        assert deployed.returncode == 0, deployed.stderr
        assert deployed.stdout.splitlines()[-1] == (
            f"1 deployment on {own.url}; start a worker: PREFECT_API_URL={own.url} prefect worker start "
            "--pool peras-process"
        )
        assert (deployments(own.url), deployments(prefect_server)) == ([("ingest", "sample")], theirs)
    finally:
        stop, _ = peras(env, "server", "stop")
    assert stop.stdout == f"stopped: {own.url}\n"
    assert not own.healthy() and httpx.get(f"{prefect_server}/health", timeout=5).status_code == 200


def deployments(url: str) -> list[tuple[str, str]]:
    """(flow name, deployment name) of every deployment on a Prefect server."""
    found = httpx.post(f"{url}/deployments/filter", json={}, timeout=10, trust_env=False).json()
    flows = {f["id"]: f["name"] for f in httpx.post(f"{url}/flows/filter", json={}, timeout=10, trust_env=False).json()}
    return sorted((flows[d["flow_id"]], d["name"]) for d in found)


@pytest.fixture
def other_process() -> Iterator[subprocess.Popen[bytes]]:
    """A live process that is not a Prefect server (in a group of its own), its id as a stale server.pid may hold."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
    yield proc
    proc.kill()
    proc.wait()


@pytest.fixture
def server_home(monkeypatch, tmp_path: Path) -> LocalServer:
    """The local server's settings, private to the test: its home and a port where nothing listens."""
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    monkeypatch.setenv("PERAS_PREFECT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PERAS_PREFECT_PORT", str(free_port()))
    (tmp_path / "home").mkdir()
    return LocalServer.configured()


# what a server.pid may hold once its server is gone and the id was given to another process
STALE = {
    "id alone (an older peras)": lambda pid: f"{pid}\n",
    "id, start time, command": lambda pid: f"{pid}\n1\n{sys.executable} -m prefect server start --port 4200\n",
}


@pytest.mark.core
@pytest.mark.parametrize("written", STALE.values(), ids=STALE.keys())
@pytest.mark.parametrize("command", ["status", "stop"])
def test_a_stale_pid_file_naming_another_process_is_removed_and_that_process_is_never_signalled(
    capsys, server_home, other_process, written, command
):
    server_home.pid_file.write_text(written(other_process.pid))
    server_home.port_file.write_text(f"{server_home.port} {server_home.port}\n")
    result = run_cli(capsys, "server", command)
    said = {
        "status": f"not running: the next command that runs a flow starts it on {server_home.url} "
        f"(home {server_home.home})\n",
        "stop": f"not running: {server_home.url}\n",
    }[command]
    assert (result.exit_code, result.out, result.err) == (
        0,
        said,
        f"removed the stale {server_home.pid_file}: process {other_process.pid} is not the Prefect server peras "
        "started\n",
    )
    assert not server_home.pid_file.exists() and not server_home.port_file.exists()
    assert other_process.poll() is None  # never signalled (the old `stop` sent SIGTERM, waited, then SIGKILL)


@pytest.mark.core
def test_a_port_answering_a_web_page_is_not_taken_for_a_prefect_server(capsys, monkeypatch, server_home):
    with web_page() as port:
        monkeypatch.setenv("PERAS_PREFECT_PORT", str(port))
        status = run_cli(capsys, "server", "status")
        stop = run_cli(capsys, "server", "stop")
    assert (status.exit_code, status.out, status.err) == (
        0,
        f"not running: port {port} answers, but not as a Prefect server (another program): the next command that "
        "runs a flow starts peras' own on the next free port\n",
        "",
    )
    assert (stop.exit_code, stop.out) == (0, f"not running: http://127.0.0.1:{port}/api\n")


@contextlib.contextmanager
def web_page() -> Iterator[int]:
    """A loopback web server answering every GET with 200 and a page (as a proxy's or a dashboard's would): its port."""

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            body = b"<html><body>Welcome</body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - http.server's signature
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.core
@pytest.mark.parametrize("there", ["nothing", "a web page"])
def test_prefect_api_url_naming_no_prefect_server_is_one_line_at_once(capsys, monkeypatch, tmp_path, there):
    from prefect.settings import PREFECT_API_URL, temporary_settings

    local = free_port()
    monkeypatch.setenv("PERAS_PREFECT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PERAS_PREFECT_PORT", str(local))
    with contextlib.ExitStack() as stack:
        port = free_port() if there == "nothing" else stack.enter_context(web_page())
        url = f"http://127.0.0.1:{port}/api"
        monkeypatch.setenv("PREFECT_API_URL", url)
        stack.enter_context(temporary_settings(updates={PREFECT_API_URL: url}))
        result = run_cli(capsys, "ingest", "sample", "--warehouse", str(tmp_path / "peras.duckdb"))
    hint = f"unset PREFECT_API_URL to use the local server (http://127.0.0.1:{local}/api)\n"
    assert (result.exit_code, result.out, result.err) == {
        "nothing": (1, "", f"error: no Prefect server answers at {url} (PREFECT_API_URL): start it, or {hint}"),
        "a web page": (
            2,
            "",
            f"error: {url} (PREFECT_API_URL) answers with a web page, not as a Prefect API: set it to a Prefect "
            f"server's API URL (http://HOST:PORT/api), or {hint.replace('unset PREFECT_API_URL', 'unset it')}",
        ),
    }[there]
    assert not (tmp_path / "peras.duckdb").exists()


@pytest.mark.core
@pytest.mark.parametrize("setting", ["PERAS_PREFECT_HOME", "PREFECT_HOME"])
def test_a_prefect_home_that_is_a_file_is_one_line(capsys, monkeypatch, tmp_path, setting):
    from prefect.settings import PREFECT_API_URL, PREFECT_HOME, temporary_settings

    afile = tmp_path / "afile"
    afile.write_text("not a directory\n")
    monkeypatch.delenv("PREFECT_API_URL")
    monkeypatch.setenv("PERAS_PREFECT_HOME", str(tmp_path / "server-home"))
    monkeypatch.setenv("PERAS_PREFECT_PORT", str(free_port()))
    updates = {}
    if setting == "PERAS_PREFECT_HOME":  # the local server's
        monkeypatch.setenv("PERAS_PREFECT_HOME", str(afile / "prefect"))
    else:  # Prefect's own: the temporary server's database is there
        monkeypatch.setenv("PERAS_PREFECT_SERVER", "ephemeral")
        updates = {PREFECT_HOME: str(afile)}
    with temporary_settings(updates=updates, restore_defaults={PREFECT_API_URL}):
        result = run_cli(capsys, "ingest", "sample", "--warehouse", str(tmp_path / "peras.duckdb"))
    named = afile / "prefect" if setting == "PERAS_PREFECT_HOME" else afile
    assert (result.exit_code, result.out, result.err) == (
        2,
        "",
        f"error: bad setting {setting}={str(named)!r}: {afile} is a file, not a directory; name a directory "
        "(created if missing)\n",
    )
    assert not (tmp_path / "server-home").exists() and not (tmp_path / "peras.duckdb").exists()
