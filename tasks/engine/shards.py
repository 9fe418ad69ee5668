"""Append-only shards: how the engine journals without holding the warehouse's single write lock.

A run's shards live in `<shards>/<warehouse_id>/<kind>/<run_id>/`, so two warehouses in one directory, or two
runs of one name in two warehouses, never see each other's files; every line also carries the warehouse and
run it belongs to, and loading refuses a shard whose lines belong elsewhere. Each shard is a pair of files,
`<name>.requests.jsonl` and `<name>.outcomes.jsonl`, appended without a user-space buffer. Inside an event loop the
lines journaled during one iteration of the loop are written together at its next iteration, requests before
outcomes (one write per file instead of one per line: the journal was ~12% of the asking engine's CPU); outside
one, each line is written at once. A process killed at any moment therefore loses what it journaled since the
loop last turned (no await runs in between: what it would have lost killed a moment earlier) and at most a torn
last line, which reads as null and is skipped; an outcome is never on disk without its requests. The journal rotates to
a new shard every `rows_per_shard` outcomes and hands the closed one to the loader (progress is visible in the
warehouse while the run goes on). Loading is one transaction per shard batch, then the files are deleted:
rows already stored are kept (requests) or checked (outcomes), so loading twice is harmless.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from peras import lake
from peras.errors import CheckFailed
from peras.sql import run_sql, run_statements
from peras.warehouse import connect, kept_open, now, retrying, retrying_bounded, transaction
from tasks.engine.spec import Attempt, RunIdentity
from tasks.engine.stage import present_declarations, sql_of

# Outcomes per shard by default (--chunk-size): full shards are loaded while asking goes on (tasks/engine/engine.py:
# at most every load_interval_s, each in its own transaction), under the tight
# memory cap of sql/warehouse/set_memory_tight.sql, which a shard of this many judgments fits (a larger one is
# loaded under the wide cap on a second try, peras.warehouse.bounded).
ROWS_PER_SHARD = 4096
KINDS = ("requests", "outcomes")
# Closed shards synced on the executor at once, at most: past that (tiny shards, `--chunk-size 1`, or a slow disk) a
# rotation syncs on the loop as it used to, so open files and queued syncs stay bounded.
MAX_SYNCING = 4


def shard_dir(shards_root: Path, identity: RunIdentity) -> Path:
    """Where one run's shards live: its warehouse, its kind of stage, its run."""
    return shards_root / identity.warehouse_id / identity.kind / identity.run_id


class ShardJournal:
    """Appends request and outcome lines for one engine run, rotating to a new shard every N outcomes."""

    def __init__(
        self,
        directory: Path,
        identity: RunIdentity,
        rows_per_shard: int,
        on_closed: Callable[[list[Path]], None] | None = None,
    ) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.identity = identity
        self.rows_per_shard = max(1, rows_per_shard)
        self.on_closed = on_closed
        self._stem = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self._sequence = 0
        self._outcomes = 0
        self._files: dict[str, BinaryIO] = {}
        self._paths: list[Path] = []
        self._stamp = {"warehouse_id": identity.warehouse_id, "run_id": identity.run_id}
        self._pending: dict[str, list[bytes]] = {kind: [] for kind in KINDS}
        self._flush_scheduled = False
        self._error: OSError | None = None  # a deferred write that failed (disk full): raised by the next call
        self._syncing = 0  # closed shards being synced on the executor (each holds its two files open until then)

    def request(self, row: dict[str, Any]) -> None:
        """Journal one LLM request and its answer (the row is stamped with the warehouse and run in place)."""
        self._write("requests", row)

    def outcome(self, row: dict[str, Any]) -> None:
        """Journal one outcome (a judgment, a batch; stamped in place); rotate when the shard is full."""
        self._write("outcomes", row)
        self._outcomes += 1
        if self._outcomes >= self.rows_per_shard:
            self.rotate()

    def _write(self, kind: str, row: dict[str, Any]) -> None:
        if self._error is not None:
            raise self._error
        if not self._files:
            self._open()
        row.update(self._stamp)  # in place: the rows are the engine's own, built for this line (no copy)
        self._pending[kind].append(orjson.dumps(row))
        if self._flush_scheduled:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush()
            return
        self._flush_scheduled = True
        loop.call_soon(self._flush_later)

    def _flush_later(self) -> None:
        # On the loop, an error would only be logged: keep it for the next line or the rotation to raise.
        try:
            self.flush()
        except OSError as exc:
            self._error = exc

    def flush(self) -> None:
        """Write the lines journaled since the last flush: requests first, so an outcome never precedes them."""
        self._flush_scheduled = False
        for kind in KINDS:
            lines = self._pending[kind]
            if lines:
                lines.append(b"")
                data = b"\n".join(lines)
                self._pending[kind] = []
                written = self._files[kind].write(data)
                while written is not None and written < len(data):  # unbuffered: a write may be partial
                    data = data[written:]
                    written = self._files[kind].write(data)

    def _open(self) -> None:
        self._sequence += 1
        self._paths = [self.directory / f"{self._stem}-{self._sequence:05d}.{kind}.jsonl" for kind in KINDS]
        self._files = {kind: path.open("ab", buffering=0) for kind, path in zip(KINDS, self._paths, strict=True)}

    def rotate(self) -> None:
        """Close the current shard (every line written) and hand it to the loader; its files are synced to disk and
        closed at once, on a thread of the loop's executor inside an event loop (an fsync takes milliseconds, ~5 ms
        a 6 MB shard here and more on slower disks, and every request of the run would wait for it on the loop)."""
        if self._error is not None:
            raise self._error
        if not self._files:
            return
        self.flush()
        handles = list(self._files.values())
        closed, self._files, self._paths, self._outcomes = self._paths, {}, [], 0
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is None or self._syncing >= MAX_SYNCING:  # shards closing faster than the disk syncs them: wait here
            _sync_and_close(handles)
        else:
            self._syncing += 1
            loop.run_in_executor(None, _sync_and_close, handles).add_done_callback(self._synced)
        if self.on_closed is not None:
            self.on_closed(closed)

    def _synced(self, done: asyncio.Future[None]) -> None:
        self._syncing -= 1
        # A shard that could not be synced (the disk failed, or filled as the kernel wrote it back): the next line
        # or rotation raises it, as a failed deferred write does.
        failed = None if done.cancelled() else done.exception()
        if isinstance(failed, OSError):
            self._error = failed

    def close(self) -> None:
        """Close the last shard (handing it to the loader)."""
        self.rotate()


def _sync_and_close(handles: list[BinaryIO]) -> None:
    """Sync closed shard files to disk and close them (all of them closed, even when one fails to sync)."""
    try:
        for handle in handles:
            os.fsync(handle.fileno())
    finally:
        for handle in handles:
            handle.close()


def shard_files(directory: Path) -> dict[str, list[str]]:
    """Every non-empty shard file of a run, by kind, in name order."""
    if not directory.is_dir():
        return {kind: [] for kind in KINDS}
    return {
        kind: sorted(str(path) for path in directory.glob(f"*.{kind}.jsonl") if path.stat().st_size > 0)
        for kind in KINDS
    }


def load_shards(
    warehouse: Path, shards_root: Path, identity: RunIdentity, files: dict[str, list[str]] | None = None
) -> int:
    """Load shard files of a run (all of them by default) in one transaction, then delete them.

    Lines of another warehouse or run are refused (nothing is loaded). Returns the number of outcomes that
    contradicted a stored answer and were left out (their items are asked again from the stored answers).
    """
    files = files if files is not None else shard_files(shard_dir(shards_root, identity))
    if not any(files.values()):
        return 0
    params = {"warehouse_id": identity.warehouse_id, "run_id": identity.run_id}

    def load(limits: str) -> int:
        with connect(warehouse) as con:  # the flow migrated it before the run
            # One core and a bounded buffer pool: loads run beside the asking and must not starve it or grow with it.
            run_sql(con, limits)
            with transaction(con):
                dropped = _load(con, identity, files, params)
            if lake.in_lake(con):  # no keys: another loader may have stored a request too (or left copies, killed)
                dropped += retrying(lambda: mend_request_copies(con, identity))
            return dropped

    dropped = retrying_bounded(load)  # a DuckLake commit another writer's beat is loaded again, whole
    for paths in files.values():
        for path in paths:
            Path(path).unlink(missing_ok=True)
    return dropped


def load_closed_shards(warehouse: Path, shards_root: Path, identity: RunIdentity, shards: list[list[Path]]) -> int:
    """Load closed shards (each a requests file and an outcomes file) one after another, each in its own transaction
    as `load_shards` loads it, with the warehouse file opened once for all of them (`kept_open`: one attachment and
    one checkpoint, not one per shard). Returns the outcomes left out, in all."""
    with kept_open(warehouse):
        return sum(
            load_shards(warehouse, shards_root, identity, {"requests": [str(files[0])], "outcomes": [str(files[1])]})
            for files in shards
        )


class Superseded(CheckFailed):
    """A part's attempt tried to commit after the parent started the part again: it stops, committing nothing."""


# Stages whose outcomes reference several requests each (a judgment: its label, confidence and sampling requests),
# checked against them by their own merge (sql/judge/merge_outcomes.sql through judgment_check), not by
# sql/engine/check_staged_outcomes.sql, which checks an outcome's one `request_id`.
OWN_OUTCOME_CHECK = frozenset({"judge"})


def _load(con: Any, identity: RunIdentity, files: dict[str, list[str]], params: dict[str, Any]) -> int:
    """Requests first (outcomes are checked against them), then outcomes; returns the outcomes left out."""
    if identity.attempt is not None:
        _check_current_attempt(con, identity, identity.attempt)
    if files["requests"]:
        run_sql(con, "engine/stage_requests", {"paths": files["requests"]})
        _refuse_foreign(con, "requests", files["requests"], params)
        run_sql(con, "engine/merge_requests", {"replaced_at": now()})
    if not files["outcomes"]:
        return 0
    run_statements(con, sql_of(identity.kind, "stage_outcomes"), {"paths": files["outcomes"]})
    _refuse_foreign(con, "outcomes", files["outcomes"], params)
    if identity.kind not in OWN_OUTCOME_CHECK:
        run_sql(con, "engine/check_staged_outcomes")
    merged = run_statements(con, sql_of(identity.kind, "merge_outcomes"), {"replaced_at": now()})
    return int(merged.fetchone()[0])


def _check_current_attempt(con: Any, identity: RunIdentity, attempt: Attempt) -> None:
    """A part's attempt commits only while it is the part's current one (in the load's own transaction)."""
    key = {"kind": identity.kind, "run_id": identity.run_id, "part": attempt.part}
    run_sql(con, "engine/attempt/touch_attempt", key | {"attempt": attempt.number, "now": now()})
    current = run_sql(con, "engine/attempt/select_attempt", key).fetchone()
    if current is None or int(current[0]) != attempt.number:
        raise Superseded(
            f"part {attempt.part} of {identity.kind} run {identity.run_name}: attempt {attempt.number} was superseded"
            f" by attempt {current[0] if current else '(none)'} (its host was taken for lost); nothing more of it is"
            " committed"
        )


def mend_request_copies(con: Any, identity: RunIdentity) -> int:
    """Bring requests stored twice back to one (a lake has no keys: after each load, and before a gate that found a
    problem, tasks/engine/runs.py); outcomes built on a copy that went and no longer derivable leave their runs
    (stages declaring `drop_on_replaced_copies`). Returns how many of `identity`'s run left."""
    replaced_at = now()
    with transaction(con):
        run_sql(con, "engine/dedupe_requests", {"replaced_at": replaced_at})
        if not run_sql(con, "engine/count_deduped_requests").fetchone()[0]:
            return 0  # the common case: no request was stored twice, nothing was built on a copy
        moved = 0
        for stage in present_declarations(con):
            if REDERIVED in stage.own_sql:
                params = {"replaced_at": replaced_at, "run_id": identity.run_id}
                moved += int(run_statements(con, stage.sql(REDERIVED), params).fetchone()[0])
        return moved


# What a stage whose outcomes are re-derived from their requests does after copies of a request went.
REDERIVED = "drop_on_replaced_copies"


def _refuse_foreign(con: Any, kind: str, paths: list[str], params: dict[str, Any]) -> None:
    """Shards whose lines name another warehouse or run are refused, loading nothing."""
    foreign = run_sql(con, f"engine/select_foreign_{kind}", params).fetchall()
    if foreign:
        (warehouse_id, run_id, n_lines), *_ = foreign
        raise CheckFailed(
            f"{kind} shards in {Path(paths[0]).parent} hold {n_lines} line(s) of warehouse {warehouse_id},"
            f" run {run_id}, not of this warehouse ({params['warehouse_id']}) and run ({params['run_id']});"
            " nothing was loaded."
            " Move those files away (they belong to another warehouse or run) and re-run"
        )
