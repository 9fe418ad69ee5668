"""A real `prefect server` on a free loopback port with its own PREFECT_HOME: for tests and benchmarks.

with prefect_server() as url:        # http://127.0.0.1:PORT/api, healthy
    os.environ["PREFECT_API_URL"] = url
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

START_TIMEOUT_S = 90.0


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


@contextlib.contextmanager
def prefect_server(home: Path | None = None) -> Iterator[str]:
    """Start `prefect server start` (its log in HOME/server.log), wait until healthy, yield the API URL, stop it.

    Without `home` a temporary directory is used and removed afterwards.
    """
    own_home = home is None
    home = Path(tempfile.mkdtemp(prefix="peras-prefect-")) if home is None else home
    home.mkdir(parents=True, exist_ok=True)
    port = free_port()
    env = {**os.environ, **server_env(home), "PREFECT_API_URL": ""}
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
            raise RuntimeError(f"prefect server did not start: {log_path.read_text()[-2000:]}")
        time.sleep(0.5)
