"""A real `prefect server` on a free loopback port with its own PREFECT_HOME: for tests and benchmarks.

with prefect_server() as url:        # http://127.0.0.1:PORT/api, healthy
    os.environ["PREFECT_API_URL"] = url
"""

from __future__ import annotations

import contextlib
import http.server
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

START_TIMEOUT_S = 240.0  # a loaded 2-core machine (load 40+) took over 90 s to print a line


def free_port() -> int:
    """A free TCP port on loopback."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def server_env(home: Path) -> dict[str, str]:
    """The variables that point a process at a private Prefect home, quietly and without analytics."""
    return {
        "PREFECT_HOME": str(home),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_LOGGING_LEVEL": "WARNING",
    }


# The server's background services no test uses, off in the tests' server (tests/conftest.py): its CPU for 20 flow
# runs of 3 tasks went from 3.8 s to 2.6 s (side by side, 2 cores at load ~40). Nothing in peras or its tests reads
# task runs from the API (task_run_recorder writes one for every task-run event), pauses a flow, takes a
# task-concurrency lease or looks at a run's Late state. Kept on: triggers (deploy/prefect.yaml's deployment triggers:
# tests/test_deploy.py), the scheduler (deployments' crons), the foreman and cleanup_reconciler (work pools and
# workers), the event persister and the event stream.
UNUSED_SERVICES_OFF = {
    f"PREFECT_SERVER_SERVICES_{name}_ENABLED": "false"
    for name in ("TASK_RUN_RECORDER", "LATE_RUNS", "PAUSE_EXPIRATIONS", "REPOSSESSOR")
}


@contextlib.contextmanager
def prefect_server(home: Path | None = None, settings: dict[str, str] | None = None) -> Iterator[str]:
    """Start `prefect server start` (its log in HOME/server.log), wait until healthy, yield the API URL, stop it.

    Without `home` a temporary directory is used and removed afterwards; `settings` (PREFECT_* variables) are the
    server's alone (e.g. UNUSED_SERVICES_OFF).
    """
    own_home = home is None
    home = Path(tempfile.mkdtemp(prefix="peras-prefect-")) if home is None else home
    home.mkdir(parents=True, exist_ok=True)
    port = free_port()
    env = {**os.environ, **server_env(home), **(settings or {}), "PREFECT_API_URL": ""}
    url = f"http://127.0.0.1:{port}/api"
    with (home / "server.log").open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        _wait_healthy(proc, url, home / "server.log")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if own_home:
            shutil.rmtree(home, ignore_errors=True)


def _wait_healthy(proc: subprocess.Popen[bytes], url: str, log_path: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(
                f"prefect server did not start in {START_TIMEOUT_S:.0f} s: {log_path.read_text()[-2000:]}"
            )
        time.sleep(0.5)


class Tripwire:
    """A loopback "Prefect API" that refuses every request and remembers it: where tests without a server point.

    A test marked `core` must not reach Prefect. Without PREFECT_API_URL, Prefect (or peras) would quietly
    start a server of its own (~13-20 s); pointed here, a flow fails at once and the request is on record.
    """

    def __init__(self) -> None:
        self.requests: list[str] = []
        tripwire = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _refuse(self) -> None:
                tripwire.requests.append(f"{self.command} {self.path}")
                body = b'{"detail": "this test runs without a Prefect server (it is marked core)"}'
                self.send_response(404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _refuse  # noqa: N815 - http.server's names

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - http.server's signature
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/api"
        self._thread = threading.Thread(target=self._server.serve_forever, name="prefect-tripwire", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop answering."""
        self._server.shutdown()
        self._server.server_close()
