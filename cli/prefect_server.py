"""The Prefect API every flow-running command talks to.

Without PREFECT_API_URL, Prefect starts a temporary server in each process (~13 s, more on a loaded machine).
Instead, peras starts one local server in the background the first time a command needs it and reuses it
afterwards (`peras server status|start|stop`): home in ~/.cache/peras/prefect (PERAS_PREFECT_HOME), fixed
loopback port 4200 (PERAS_PREFECT_PORT), log in HOME/server.log. A server on that port that peras did not start
(another user's, another checkout's) is never used: peras says so and starts its own on the next free port, and
remembers it (HOME/server.port) for the next commands. The UI is told the same port (its /ui-settings api_url).
PERAS_PREFECT_SERVER=ephemeral keeps Prefect's temporary server instead (CI), retried once with a longer start-up
timeout. HOME/server.pid holds the server's id, start time and command line, all checked before it is signalled.
While a command runs its flows, cli/server_watch.py ends it in one line if its server goes away.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from cli.server_watch import watching
from peras.errors import PerasError, UsageError

MODE_ENV = "PERAS_PREFECT_SERVER"  # local (default) | ephemeral
HOME_ENV = "PERAS_PREFECT_HOME"
PORT_ENV = "PERAS_PREFECT_PORT"
MODES = ("local", "ephemeral")
DEFAULT_PORT = 4200  # Prefect's own default: the UI is where Prefect's docs say it is
START_TIMEOUT_S = 120.0  # `prefect server start` takes ~18 s on 2 idle cores, much longer on loaded ones
EPHEMERAL_RETRY_TIMEOUT_S = 90
API_CHECK_TIMEOUT_S = 10.0  # PREFECT_API_URL's /health, before a command uses it (a remote server may be slow)
EPHEMERAL_HINT = (
    "start the reusable local server with `peras server start` (or unset PERAS_PREFECT_SERVER), "
    "or set PREFECT_API_URL to a running server, then re-run"
)


def mode() -> str:
    """`local` (start and reuse a background server) or `ephemeral` (Prefect's temporary one per command)."""
    value = os.environ.get(MODE_ENV, "local").strip().lower() or "local"
    if value not in MODES:
        raise UsageError(f"bad setting {MODE_ENV}={value!r}: choose from {', '.join(MODES)}")
    return value


@dataclass(frozen=True)
class LocalServer:
    """The background `prefect server start` peras manages: its home, port and files."""

    home: Path
    port: int

    @classmethod
    def configured(cls) -> LocalServer:
        """The server PERAS_PREFECT_HOME and PERAS_PREFECT_PORT describe (defaults: ~/.cache/peras/prefect, 4200),
        on the port it moved to if that one was taken when peras started it (and it still runs)."""
        home = Path(os.environ.get(HOME_ENV) or Path.home() / ".cache" / "peras" / "prefect").expanduser()
        check_home(HOME_ENV, home)
        raw_port = os.environ.get(PORT_ENV) or str(DEFAULT_PORT)
        if not raw_port.isdigit() or not 0 < int(raw_port) < 65536:
            raise UsageError(f"bad setting {PORT_ENV}={raw_port!r}: a TCP port number")
        return cls(home.resolve(), int(raw_port)).resolved()

    def resolved(self) -> LocalServer:
        """This server, or peras' running one on the port it moved to because this one was taken."""
        moved = self.moved_to()
        return self if moved is None else LocalServer(self.home, moved)

    @property
    def port_file(self) -> Path:
        """`CONFIGURED ACTUAL`: the port asked for and the one the running server peras started listens on."""
        return self.home / "server.port"

    def moved_to(self) -> int | None:
        """The port peras' running server took because this one was taken, if so."""
        try:
            asked, actual = (int(part) for part in self.port_file.read_text().split())
        except (OSError, ValueError):
            return None
        return actual if asked == self.port and actual != self.port and self.pid() is not None else None

    @property
    def url(self) -> str:
        """The API URL (what PREFECT_API_URL would hold)."""
        return f"http://127.0.0.1:{self.port}/api"

    @property
    def ui_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log(self) -> Path:
        return self.home / "server.log"

    @property
    def pid_file(self) -> Path:
        return self.home / "server.pid"

    def healthy(self, timeout_s: float = 2.0) -> bool:
        """A Prefect API answers /api/health on the port."""
        return probe(self.url, timeout_s, trust_env=False) == "prefect"  # never through HTTP_PROXY: on loopback

    def pid(self) -> int | None:
        """The process peras started, if it is still alive: the id in HOME/server.pid, checked against the start time
        and command line recorded with it (an id is reused once its process is gone: never signal another process)."""
        try:
            recorded = self.pid_file.read_text().splitlines()
            pid = int(recorded[0])
        except (OSError, ValueError, IndexError):
            return None
        found = process_identity(pid)
        if found is None:
            return None
        started, command = found
        if len(recorded) >= 3:  # pid, start time, command line
            return pid if (started, command) == (recorded[1], recorded[2]) else None
        # written by an older peras (the id alone): the command line must be this server's
        return pid if command.split()[1:] == self._command()[1:] else None

    def forget_stale(self, echo: Callable[[str], None]) -> None:
        """Remove HOME/server.pid (and server.port) when it names no running server peras started, and say so."""
        if not self.pid_file.exists() or self.pid() is not None:
            return
        with contextlib.suppress(OSError, ValueError, IndexError):
            stale = int(self.pid_file.read_text().split()[0])
            echo(f"removed the stale {self.pid_file}: process {stale} is not the Prefect server peras started")
        self.pid_file.unlink(missing_ok=True)
        self.port_file.unlink(missing_ok=True)

    def ensure(self, echo: Callable[[str], None]) -> tuple[LocalServer, bool]:
        """Make peras' server answer: reuse it if it does, else start it and wait. The server (on another port if
        this one is taken by a server peras did not start), and whether it was started now."""
        if self.pid() is not None and self.healthy():
            return self, False
        self.home.mkdir(parents=True, exist_ok=True)
        # two commands started together: the second waits for the first's server instead of starting another
        with (self.home / "server.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            self.forget_stale(echo)
            server = self.resolved()  # the first may have moved it to another port meanwhile
            if server.pid() is not None and server.healthy():
                return server, False
            if server.pid() is None:
                server = server.on_a_free_port(echo)
                echo(
                    f"starting the local Prefect server on {server.ui_url} (once; it keeps running for the next "
                    f"commands: `peras server stop` stops it; log {server.log})"
                )
                server._spawn(asked_port=self.port)
            server._wait_healthy()
        return server, True

    def on_a_free_port(self, echo: Callable[[str], None]) -> LocalServer:
        """This server, or, when something peras did not start listens on the port, the same on the next free one."""
        if not port_taken(self.port):
            return self
        who = "a Prefect server" if self.healthy() else "a program"
        port = next(p for p in range(self.port + 1, 65536) if not port_taken(p))
        echo(
            f"port {self.port} is taken by {who} peras did not start (its runs are not yours): using port {port} "
            f"instead (set {PORT_ENV} to choose one, or PREFECT_API_URL=http://127.0.0.1:{self.port}/api to use "
            "that server)"
        )
        return LocalServer(self.home, port)

    def _spawn(self, asked_port: int) -> None:
        env = {
            **os.environ,
            "PREFECT_HOME": str(self.home),
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "PREFECT_API_URL": "",
            # the UI asks the API where /ui-settings says: without this, on port 4200 whatever --port is
            "PREFECT_SERVER_UI_API_URL": self.url,
            "PREFECT_LOGGING_LEVEL": "WARNING",
        }
        command = self._command()
        with self.log.open("w") as log:
            proc = subprocess.Popen(
                command,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.home,
                start_new_session=True,  # outlives this command, and Ctrl-C in the terminal does not reach it
            )
        # the start time stays the process's own across exec; the command line is the one it runs after it
        started = process_identity(proc.pid)
        self.pid_file.write_text(f"{proc.pid}\n{started[0] if started else ''}\n{' '.join(command)}\n")
        self.port_file.write_text(f"{asked_port} {self.port}\n")
        proc.returncode = 0  # detached on purpose: no "still running" warning when this object goes away

    def _command(self) -> list[str]:
        return [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(self.port)]

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self.healthy(timeout_s=1.0):
            if self.pid() is None:
                raise PerasError(f"the local Prefect server exited at start: {last_line(self.log)} (log {self.log})")
            if time.monotonic() > deadline:
                raise PerasError(
                    f"the local Prefect server did not answer on {self.url} within {START_TIMEOUT_S:.0f} s "
                    f"(log {self.log}); `peras server stop`, then try again"
                )
            time.sleep(0.25)

    def stop(self, timeout_s: float = 20.0) -> bool:
        """Stop the server peras started (never another process on the port). True if one was stopped."""
        pid = self.pid()
        if pid is None:
            self.pid_file.unlink(missing_ok=True)
            return False
        os.killpg(pid, signal.SIGTERM)  # the server and the uvicorn workers it started
        deadline = time.monotonic() + timeout_s
        while self.pid() is not None and time.monotonic() < deadline:
            _reap(pid)
            time.sleep(0.1)
        if self.pid() is not None:
            os.killpg(pid, signal.SIGKILL)
            _reap(pid)
        self.pid_file.unlink(missing_ok=True)
        self.port_file.unlink(missing_ok=True)
        return True


def probe(url: str, timeout_s: float = 2.0, trust_env: bool = True) -> str | None:
    """What answers at a Prefect API URL: `prefect` (its /health says `true`), `page` (not JSON: a web page),
    `other` (another JSON answer: another program's API, or a server that wants a key), or None (nothing listens,
    or it does not answer in time)."""
    import httpx

    try:
        response = httpx.get(f"{url.rstrip('/')}/health", timeout=timeout_s, trust_env=trust_env)
    except httpx.HTTPError:
        return None
    try:
        return "prefect" if response.status_code == 200 and response.json() is True else "other"
    except ValueError:
        return "page"


def process_identity(pid: int) -> tuple[str, str] | None:
    """(start time, command line) of a live process, or None when there is none with this id."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        if Path("/proc/self/stat").exists():
            return None  # Linux: no such process
        return _ps_identity(pid)
    except OSError:
        return None
    # field 22, clock ticks after boot; fields counted after the command name, which may hold spaces
    started = stat[stat.rindex(")") + 2 :].split()[19]
    return started, command.rstrip(b"\0").replace(b"\0", b" ").decode(errors="replace")


def _ps_identity(pid: int) -> tuple[str, str] | None:
    """What `process_identity` reads where there is no /proc (macOS): ps's start date and command line."""
    try:
        done = subprocess.run(["ps", "-p", str(pid), "-o", "lstart=", "-o", "command="], capture_output=True, text=True)
    except OSError:  # no ps either: nothing to check against, so nothing is taken for the server
        return None
    line = done.stdout.strip()
    return (line[:24], line[24:].strip()) if done.returncode == 0 and line else None


def port_taken(port: int) -> bool:
    """Something listens on the loopback port (or holds it)."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as a server binds: TIME_WAIT is no owner
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def _reap(pid: int) -> None:
    """Collect the exit status when the server is this process's own child (started by this process)."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def last_line(path: Path) -> str:
    """The last non-blank line of a log, or a note that it is empty."""
    try:
        lines = [line.strip() for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "no log"
    return lines[-1] if lines else "empty log"


@contextlib.contextmanager
def prefect_api(echo: Callable[[str], None]) -> Iterator[None]:
    """Point Prefect at a server for the duration: the configured one, the local one, or a temporary one."""
    from prefect.settings import PREFECT_API_URL, get_current_settings, temporary_settings

    keep_loopback_direct()
    if url := get_current_settings().api.url:
        check_api(url)
        with watching(url, restart="start it again"):
            yield  # PREFECT_API_URL (environment or Prefect profile): the user's own server
        return
    if mode() == "ephemeral":
        check_home("PREFECT_HOME", get_current_settings().home)  # the temporary server's database is there
        start_ephemeral(echo)
        yield
        return
    server, _ = LocalServer.configured().ensure(echo)
    os.environ["PREFECT_API_URL"] = server.url  # child processes (embedded model, workers) inherit it
    restart = "start it again (`peras server start`)"
    with temporary_settings(updates={PREFECT_API_URL: server.url}), watching(server.url, restart):
        yield


def check_api(url: str) -> None:
    """One line, in seconds, when PREFECT_API_URL names no Prefect server: nothing answers there, or a web page does."""
    found = probe(url, timeout_s=API_CHECK_TIMEOUT_S)
    if found in ("prefect", "other"):  # `other`: a JSON answer (a server asking for a key): Prefect's client says more
        return
    local = f"the local server ({LocalServer.configured().url})"
    if found is None:
        raise PerasError(
            f"no Prefect server answers at {url} (PREFECT_API_URL): start it, or unset PREFECT_API_URL to use {local}"
        )
    raise UsageError(
        f"{url} (PREFECT_API_URL) answers with a web page, not as a Prefect API: set it to a Prefect server's API "
        f"URL (http://HOST:PORT/api), or unset it to use {local}"
    )


def check_home(setting: str, home: Path) -> None:
    """A Prefect home (created if missing) must be a directory: else one line naming the file in the way."""
    in_the_way = next((p for p in (home, *home.parents) if p.exists() and not p.is_dir()), None)
    if in_the_way is not None:
        raise UsageError(
            f"bad setting {setting}={str(home)!r}: {in_the_way} is a file, not a directory; name a directory "
            "(created if missing)"
        )


def keep_loopback_direct() -> None:
    """With a proxy in the environment, add loopback to NO_PROXY (both spellings) for this process and its children.

    Prefect's client (httpx) would otherwise send its requests to a local server through the proxy, which
    cannot reach this machine's loopback: every command would fail on a cluster that sets HTTP_PROXY.
    """
    names = ("http_proxy", "https_proxy", "all_proxy")
    if not any(os.environ.get(name) or os.environ.get(name.upper()) for name in names):
        return
    current = os.environ.get("no_proxy") or os.environ.get("NO_PROXY") or ""
    entries = [entry.strip() for entry in current.split(",") if entry.strip()]
    merged = ",".join(entries + [host for host in ("127.0.0.1", "localhost", "::1") if host not in entries])
    os.environ["no_proxy"] = os.environ["NO_PROXY"] = merged


def start_ephemeral(echo: Callable[[str], None]) -> None:
    """Start Prefect's temporary server now; if it times out, once more with a longer timeout, then one error line.

    Flows reuse the server started here (Prefect keeps one per process).
    """
    from prefect.server.api.server import SubprocessASGIServer
    from prefect.settings import PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS

    first_timeout = PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.value()
    retry_timeout = max(EPHEMERAL_RETRY_TIMEOUT_S, 3 * first_timeout)
    for timeout in (first_timeout, retry_timeout):
        server = SubprocessASGIServer()
        try:
            server.start(timeout=timeout)
            return
        except RuntimeError as exc:
            if "ephemeral Prefect API server" not in str(exc):
                raise
            server.stop()  # also forgets it: the next SubprocessASGIServer() is a fresh one
            if timeout == first_timeout:
                echo(
                    f"the temporary Prefect server did not answer within {first_timeout} s "
                    f"(a loaded machine?); retrying with {retry_timeout} s"
                )
    raise PerasError(f"the temporary Prefect server did not start within {retry_timeout} s: {EPHEMERAL_HINT}")
