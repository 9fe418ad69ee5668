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


def shard_files(directory: Path, kind: str) -> list[str]:
    """Every shard of one kind in a run's directory, in name order."""
    return sorted(str(path) for path in directory.glob(f"*.{kind}.jsonl") if path.stat().st_size > 0)


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as handle:
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b"\n"
