"""Files a command writes for its user: never one of the warehouse's own, and all of them or none.

Every command that writes a file (`peras export`, `export-qrels`, `build-runs`, `metrics --output`, `report`,
`personas export`) goes through `refuse_warehouse_files` before it writes and `write_files` to write: a qrels file
written over `peras.duckdb` or into a DuckLake data directory destroys the warehouse.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from contextlib import suppress
from pathlib import Path

from peras import lake
from peras.errors import UsageError

PARTIAL_SUFFIX = ".partial"


def protected_files(warehouse: Path) -> list[Path]:
    """The warehouse file's own files: the database, its write-ahead log, the analysts' snapshot and its log."""
    from peras.warehouse import snapshot_path, wal_path

    snapshot = snapshot_path(warehouse)
    return [warehouse, wal_path(warehouse), snapshot, wal_path(snapshot)]


def lake_data_path(warehouse: Path) -> Path | None:
    """Where a DuckLake warehouse keeps its Parquet files (None: not a lake, or a lake not created yet)."""
    if not lake.is_lake(warehouse):
        return None
    from peras.sql import run_sql
    from peras.warehouse import connect

    try:
        with connect(warehouse, read_only=True) as con:
            [(data_path,)] = run_sql(con, "warehouse/select_lake_data_path").fetchall()
    except UsageError:  # a catalog not created yet: where it will be created
        return lake.DATA_PATHS.get(str(warehouse))
    return Path(str(data_path))


def refuse_warehouse_files(paths: Iterable[Path], warehouse: Path, flag: str, given: Path) -> None:
    """A UsageError when any of `paths` (written for `flag given`) is a file of the warehouse or in a lake's data.

    Links are resolved: a link elsewhere that points at the warehouse is the warehouse.
    """
    data_path = lake_data_path(warehouse)
    for path in paths:
        where = f"{flag} {given}" if path == given else f"{flag} {given} would write {path}, which"
        choose = "another file name" if path == given else f"another {flag}"
        if data_path is not None and _inside(path, data_path):
            raise UsageError(f"{where} is inside the DuckLake warehouse's data path {data_path}: choose {choose}")
        for protected in [] if lake.is_lake(warehouse) else protected_files(warehouse):
            if _same(path, protected):
                raise UsageError(f"{where} is the warehouse's file {protected}: choose {choose}")


def _inside(path: Path, directory: Path) -> bool:
    resolved, root = path.resolve(), directory.resolve()
    return resolved == root or root in resolved.parents


def _same(path: Path, protected: Path) -> bool:
    if path.resolve() == protected.resolve():
        return True
    return path.exists() and protected.exists() and os.path.samefile(path, protected)


def check_writable(paths: Iterable[Path], flag: str, given: Path) -> None:
    """A UsageError when a file cannot be written where asked: a directory in its place, or a file in its folder's."""
    for path in paths:
        if path.is_dir():
            raise UsageError(f"{flag} {given}: {path} is a directory: choose another {flag}")
        for parent in path.parents:
            if parent.exists():
                if not parent.is_dir():
                    raise UsageError(f"{flag} {given}: {parent} is a file, not a directory: choose another {flag}")
                break


def write_files(contents: Mapping[Path, str | bytes], warehouse: Path, flag: str, given: Path) -> list[Path]:
    """Write every file whole, or none of them: each is staged beside its target, then all are renamed in place.

    A refused or failed write leaves no staged file behind and no target changed (one UsageError line). A rename
    replaces a link at the target rather than writing through it.
    """
    refuse_warehouse_files(contents, warehouse, flag, given)
    check_writable(contents, flag, given)
    staged: dict[Path, Path] = {}
    try:
        for path, content in contents.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_name(path.name + PARTIAL_SUFFIX)
            staged[path] = partial
            if isinstance(content, bytes):
                partial.write_bytes(content)
            else:
                partial.write_text(content, encoding="utf-8")
        for path, partial in staged.items():
            partial.replace(path)
    except OSError as exc:
        for partial in staged.values():
            with suppress(OSError):
                partial.unlink(missing_ok=True)
        reason = exc.strerror or str(exc)
        raise UsageError(f"{flag} {given}: cannot write {exc.filename or given}: {reason}") from None
    return list(contents)
