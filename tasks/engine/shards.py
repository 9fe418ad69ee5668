"""Append-only shards: how judge workers write without holding the warehouse's single write lock.

Each chunk appends JSON lines to `<shards>/<run_id>/<chunk>.requests.jsonl` and `.judgments.jsonl`, flushed
after every record, so a process killed at any moment loses at most the line it was writing. A loader
task moves shards into DuckDB (idempotently: rows already there are ignored), then deletes them.
A torn last line reads as null and is skipped.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, TextIO

KINDS = ("requests", "judgments")


class ShardWriter:
    """Append JSON lines for one chunk; safe to reopen after a crash (appends)."""

    def __init__(self, directory: Path, chunk_name: str) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.paths = {kind: directory / f"{chunk_name}.{kind}.jsonl" for kind in KINDS}
        self._files: dict[str, TextIO] = {
            kind: path.open("a", encoding="utf-8", buffering=1) for kind, path in self.paths.items()
        }
        for handle in self._files.values():
            # A torn line from a killed writer must not glue onto the next record.
            if handle.tell() > 0 and not _ends_with_newline(Path(handle.name)):
                handle.write("\n")

    def request(self, row: dict[str, Any]) -> None:
        """Journal one LLM request and its answer."""
        self._write("requests", row)

    def judgment(self, row: dict[str, Any]) -> None:
        """Journal one judgment."""
        self._write("judgments", row)

    def _write(self, kind: str, row: dict[str, Any]) -> None:
        handle = self._files[kind]
        handle.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")

    def close(self) -> None:
        """Flush and close both files."""
        for handle in self._files.values():
            handle.flush()
            os.fsync(handle.fileno())
            handle.close()

    def __enter__(self) -> ShardWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def move_shards(warehouse: Path, directory: Path, loaders: dict[str, str]) -> int:
    """Load every shard in `directory` with its kind's SQL (kind -> sql name) in one transaction, then delete them.

    Returns the number of shard files of the last kind loaded (the outcome lines). Idempotent: loaders insert or
    ignore, so shards left by a crash between commit and delete load again harmlessly.
    """
    from peras.sql import run_sql
    from peras.warehouse import open_migrated

    files = {kind: shard_files(directory, kind) for kind in loaders}
    if not any(files.values()):
        return 0
    with open_migrated(warehouse) as con:
        con.execute("begin transaction")
        for kind, sql_name in loaders.items():
            if files[kind]:
                run_sql(con, sql_name, {"paths": files[kind]})
        con.execute("commit")
    for paths in files.values():
        for path in paths:
            Path(path).unlink(missing_ok=True)
    return len(files[list(loaders)[-1]])


async def run_bounded(items: list[Any], concurrency: int, handle: Any) -> None:
    """Await `handle(item)` for every item, at most `concurrency` at a time, taking items in the order given."""
    import asyncio

    queue: asyncio.Queue[Any] = asyncio.Queue()
    for item in items:
        queue.put_nowait(item)

    async def worker() -> None:
        while not queue.empty():
            await handle(queue.get_nowait())

    await asyncio.gather(*(worker() for _ in range(max(1, min(concurrency, len(items))))))


def shard_files(directory: Path, kind: str) -> list[str]:
    """Every shard of one kind in a run's directory, in name order."""
    return sorted(str(path) for path in directory.glob(f"*.{kind}.jsonl") if path.stat().st_size > 0)


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as handle:
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b"\n"
