"""Collections ingested once per session by the real ingest flow; each test gets its own copy of the warehouse.

Ingesting is what many tests start from, not what they test (tests/test_ingest.py does that). The first test
that asks for a collection runs `ingest(preset=...)` into a session directory; later ones copy the files it left
(the warehouse and its analysts' snapshot, modification times kept, so the snapshot stays current) instead of
running the flow again. Settings that differ in anything but where the files go get their own ingest.

Given a `shared` directory (pytest-xdist: the workers' common temporary directory), the workers of one test session
share it too: the first to ask makes it under a file lock, the others wait and copy (results pickled beside it).
"""

from __future__ import annotations

import fcntl
import hashlib
import pickle
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # imported when first used: conftest loads this before Prefect's environment is set
    from peras.settings import Settings

T = TypeVar("T")
PLACES = {"warehouse", "reports_dir"}  # where the files go: a copy is the same whatever these are


class Ingested:
    """`ingested("sample", settings)`: settings.warehouse as `ingest(preset="sample", settings=settings)` leaves it."""

    def __init__(self, shared: Path | None = None) -> None:
        self.shared = shared is not None  # the directory is the session's, removed by whoever made it
        self.root = shared if shared is not None else Path(tempfile.mkdtemp(prefix="peras-ingested-"))
        self.root.mkdir(parents=True, exist_ok=True)
        self._made: dict[str, tuple[Path, Any]] = {}

    def __call__(self, preset: str, settings: Settings) -> Settings:
        """Ingest `preset` into the fresh warehouse of `settings` (a copy of the session's one ingest); return it."""
        from flows.ingest import ingest

        self.made(f"ingest {preset}", settings, lambda template: ingest(preset=preset, settings=template))
        return settings

    def made(self, name: str, settings: Settings, make: Callable[[Settings], T]) -> T:
        """What `make(settings)` returns and leaves in the fresh warehouse of `settings`: made once, then copied."""
        from peras.lake import is_lake
        from peras.warehouse import snapshot_path, wal_path

        target = Path(settings.warehouse)
        if is_lake(settings.warehouse) or target.exists():
            return make(settings)  # not a fresh warehouse file: a copy would not be the same
        key = name + settings.model_dump_json(exclude=PLACES)
        if key not in self._made:
            directory = self.root / hashlib.sha256(key.encode()).hexdigest()[:16]
            with (self.root / f"{directory.name}.lock").open("w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)  # another worker making it: wait, then take what it made
                result = directory / "result.pickle"
                if not result.exists():
                    shutil.rmtree(directory, ignore_errors=True)  # a maker that died half-way left it
                    directory.mkdir()
                    template = settings.model_copy(
                        update={"warehouse": directory / "peras.duckdb", "reports_dir": directory / "reports"}
                    )
                    made = make(template)
                    result.with_suffix(".part").write_bytes(pickle.dumps(made))
                    result.with_suffix(".part").rename(result)
                self._made[key] = (directory / "peras.duckdb", pickle.loads(result.read_bytes()))  # noqa: S301
        source, result = self._made[key]
        target.parent.mkdir(parents=True, exist_ok=True)
        for path_of in (lambda warehouse: warehouse, snapshot_path, wal_path):
            if path_of(source).exists():
                shutil.copy2(path_of(source), path_of(target))  # copy2 keeps the modification time
        return result

    def close(self) -> None:
        """Remove the session's ingested warehouses (shared ones: whoever owns the directory removes it)."""
        if not self.shared:
            shutil.rmtree(self.root, ignore_errors=True)
