"""The engine's one door to the warehouse: a single thread that runs every query and load of a run.

DuckDB refuses a read-only and a read-write connection to one file in the same process, and a connection held
open locks the file against other processes. So every plan query, answer look-up and shard load of a run goes
through this one thread. Reads share one read-only connection, reopened after LEASE_S and closed once no work
has been queued for IDLE_S (so another process's writer waits at most that long); a load closes it and writes
through its own short connection. Keeping it open between batches matters: opening one costs ~20 ms and its first
look-up reads the request ids cold (~50 ms), where a warm look-up of 64 answers among 200,000 takes ~7 ms. The
event loop never waits on DuckDB except for the plan's group queries.

A load runs on a thread of its own at a lower CPU priority (nice +LOAD_NICE on Linux) while the warehouse thread
waits for it, so loads stay in order with every read: on a busy machine a shard's load takes the CPU the asking and
the server leave over, instead of a share of theirs (loading 4,096 judgments costs 0.25-0.3 s of CPU, 60-75 us a
request, which on 2 cores competed with the server for the core the event loop does not use). The last load, after the
asking, has the CPU to itself.

Answer look-ups are cheap when the answer is not stored: the model's stored request ids are held as a sorted
array of 64-bit prefixes (8 bytes each), so a miss is answered in memory; hits are fetched in batches (every
look-up waiting while the previous batch ran goes in the next one).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa

from peras.sql import run_sql, run_statements
from peras.warehouse import connect

T = TypeVar("T")
LEASE_S = 0.5  # longest a read-only connection stays open while reads keep coming
IDLE_S = 0.1  # a read-only connection no work has used for this long is closed
LOAD_NICE = 10  # how much lower the loads' thread runs than the asking (Linux nice steps; 19 is the lowest)


def lower_priority(steps: int = LOAD_NICE) -> None:
    """Lower the calling thread's CPU priority by `steps` nice steps (Linux: the nice value is a thread's own;
    elsewhere nothing is changed, as setpriority would apply to the whole process)."""
    if sys.platform.startswith("linux"):
        tid = threading.get_native_id()
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + steps))


# Not frozen: built once or twice a request, and a frozen dataclass costs ~1 us more to build (issue 35); never
# changed once built.
@dataclass(slots=True)
class StoredAnswer:
    """A request's stored answer: what it said, whether it read, and which run stored it."""

    raw_text: str | None
    logprobs: list[dict[str, Any]] | None
    parse_status: str  # 'ok', 'parse_failure', 'refused'
    parse_reason: str | None
    run_id: str | None


FILTER_BITS = 24  # the answer cache's filter: a bit per value of a prefix's first 24 bits


def id_prefix(request_id: str) -> int:
    """The first 64 bits of a request id (hex sha256), as an unsigned integer."""
    return int(request_id[:16], 16)


class WarehouseThread:
    """Runs warehouse work on one thread; `call` from the event loop, `run` from synchronous code."""

    def __init__(self, warehouse: Path) -> None:
        self.warehouse = warehouse
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="peras-warehouse")
        self._loader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="peras-load", initializer=lower_priority)
        self._queued = 0
        self._lock = threading.Lock()
        self._reader: contextlib.ExitStack | None = None
        self._reader_con: Any = None
        self._reader_at = 0.0
        self._used_at = 0.0
        self._idle_timer: threading.Timer | None = None
        self._closed = False

    async def call(self, func: Callable[..., T], *args: Any) -> T:
        """Await `func(*args)` on the warehouse thread."""
        context = contextvars.copy_context()  # Prefect's run context (logger, artifacts) follows the work
        return await asyncio.get_running_loop().run_in_executor(self._executor, context.run, self._wrap(func), *args)

    def run(self, func: Callable[..., T], *args: Any) -> T:
        """`func(*args)` on the warehouse thread, waiting for it."""
        return self._executor.submit(self._wrap(func), *args).result()

    def write(self, func: Callable[..., T], *args: Any) -> T:
        """`func(*args)` that opens its own read-write connection: the shared reader is closed first, and it runs on
        the lower-priority load thread while this one waits (so nothing else touches the warehouse meanwhile)."""
        self.release()
        context = contextvars.copy_context()  # Prefect's run context follows the work, as in `call`
        return self._loader.submit(context.run, func, *args).result()

    def reading(self) -> Any:
        """The shared read-only connection (on the warehouse thread only)."""
        if self._reader is not None and time.monotonic() - self._reader_at > LEASE_S:
            self.release()
        if self._reader is None:
            stack = contextlib.ExitStack()
            self._reader_con = stack.enter_context(connect(self.warehouse, read_only=True))
            self._reader, self._reader_at = stack, time.monotonic()
        return self._reader_con

    def release(self) -> None:
        """Close the shared read-only connection (other processes may write again)."""
        if self._reader is not None:
            reader, self._reader, self._reader_con = self._reader, None, None
            reader.close()

    def _wrap(self, func: Callable[..., T]) -> Callable[..., T]:
        with self._lock:
            self._queued += 1

        def wrapped(*args: Any) -> T:
            try:
                return func(*args)
            finally:
                with self._lock:
                    self._queued -= 1
                    idle = self._queued == 0
                if idle:
                    self._used_at = time.monotonic()
                    self._release_later()

        return wrapped

    def _release_later(self, delay_s: float | None = None) -> None:
        """Close the reader once it has been idle for IDLE_S (on the warehouse thread, where it was used)."""
        if self._reader is None or self._idle_timer is not None:
            return

        def submit() -> None:
            with contextlib.suppress(RuntimeError):  # closed meanwhile: close() released the reader
                self._executor.submit(release_if_idle)

        def release_if_idle() -> None:
            self._idle_timer = None
            with self._lock:
                busy = self._queued > 0  # that work schedules the release again when it ends
            if busy:
                return
            idle_s = time.monotonic() - self._used_at
            if idle_s >= IDLE_S:
                self.release()
            else:  # used again since this timer was set: wait out the rest of IDLE_S from that use
                self._release_later(IDLE_S - idle_s)

        self._idle_timer = threading.Timer(IDLE_S if delay_s is None else delay_s, submit)
        self._idle_timer.daemon = True
        self._idle_timer.start()

    def fetch(self, sql: str | list[str], params: dict[str, Any]) -> list[tuple[Any, ...]]:
        """Rows of a read-only query (for plans), on the warehouse thread: a SQL file's name, or statements."""
        if isinstance(sql, str):
            return self.run(lambda: list(run_sql(self.reading(), sql, params).fetchall()))
        return self.run(lambda: list(run_statements(self.reading(), sql, params).fetchall()))

    def close(self) -> None:
        """Finish queued work and stop the thread (again: nothing)."""
        if self._closed:
            return
        self._closed = True
        self._executor.submit(self.release)
        self._executor.shutdown(wait=True)
        self._loader.shutdown(wait=True)
        timer = self._idle_timer
        if timer is not None:
            timer.cancel()


class AnswerCache:
    """Stored answers of one model, looked up by request id (batched, misses answered in memory)."""

    def __init__(self, thread: WarehouseThread, model: str) -> None:
        self.thread = thread
        self.model = model
        self._prefixes = np.empty(0, dtype=np.uint64)
        # A bit per value of a prefix's first FILTER_BITS bits, set when a stored prefix has it: most requests a run
        # asks are not stored, and one bit tells so in ~0.1 us where the sorted array's search costs ~2 us (numpy's
        # call) for every request once a shard is loaded. 2 MB; at a million stored requests 6% of misses search.
        self._filter = bytearray(1 << (FILTER_BITS - 3))
        self._waiting: dict[str, list[asyncio.Future[StoredAnswer | None]]] = {}
        self._busy = False

    def refresh(self) -> None:
        """Re-read which requests of the model are stored (call on the warehouse thread)."""
        rows = run_sql(self.thread.reading(), "engine/select_request_prefixes", {"model": self.model}).fetchnumpy()
        self._prefixes = np.sort(rows["prefix"].astype(np.uint64))
        filter_ = np.zeros(1 << (FILTER_BITS - 3), dtype=np.uint8)
        tops = np.unique(self._prefixes >> np.uint64(64 - FILTER_BITS)).astype(np.int64)
        np.bitwise_or.at(filter_, tops >> 3, (1 << (tops & 7)).astype(np.uint8))
        self._filter = bytearray(filter_.tobytes())

    def add(self, request_ids: list[str]) -> None:
        """Note requests just stored (their shard loaded), so that lookups find them."""
        if request_ids:
            prefixes = [id_prefix(r) for r in request_ids]
            self._prefixes = np.union1d(self._prefixes, np.array(prefixes, dtype=np.uint64))
            for prefix in prefixes:
                top = prefix >> (64 - FILTER_BITS)
                self._filter[top >> 3] |= 1 << (top & 7)

    def might_have(self, request_id: str) -> bool:
        """False when the request is certainly not stored."""
        if not len(self._prefixes):  # nothing stored yet (a fresh run): no conversion, no search
            return False
        prefix = id_prefix(request_id)
        top = prefix >> (64 - FILTER_BITS)
        if not self._filter[top >> 3] >> (top & 7) & 1:
            return False
        position = int(np.searchsorted(self._prefixes, np.uint64(prefix)))
        return position < len(self._prefixes) and int(self._prefixes[position]) == prefix

    async def get(self, request_id: str) -> StoredAnswer | None:
        """The stored answer, or None."""
        if not self.might_have(request_id):
            return None
        future: asyncio.Future[StoredAnswer | None] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(request_id, []).append(future)
        if not self._busy:
            self._busy = True
            asyncio.get_running_loop().create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        try:
            while self._waiting:
                await self._gathered()
                batch, self._waiting = self._waiting, {}
                try:
                    found = await self.thread.call(self._lookup, sorted(batch))
                except Exception as exc:  # noqa: BLE001 - every waiter gets the error
                    for futures in batch.values():
                        for future in futures:
                            future.set_exception(exc)
                    continue
                for request_id, futures in batch.items():
                    for future in futures:
                        future.set_result(found.get(request_id))
        finally:
            self._busy = False

    async def _gathered(self) -> None:
        """Wait while look-ups keep coming: a worker waiting on one is replaced by another, which asks for the next
        (tasks/engine/workers.py, Workers), so a rerun's look-ups join one batch instead of a batch per worker. Until
        two turns of the loop bring none (a new worker's first step may come a turn after its start)."""
        quiet, size = 0, len(self._waiting)
        while quiet < 2:
            await asyncio.sleep(0)
            quiet, size = (quiet + 1, size) if len(self._waiting) == size else (0, len(self._waiting))

    def _lookup(self, request_ids: list[str]) -> dict[str, StoredAnswer]:
        con = self.thread.reading()
        con.register("wanted_requests", pa.table({"request_id": pa.array(request_ids, pa.string())}))
        rows = run_sql(con, "engine/select_stored_answers").fetchall()
        con.unregister("wanted_requests")
        return {
            request_id: StoredAnswer(raw_text, json.loads(logprobs) if logprobs else None, status, reason, run_id)
            for request_id, raw_text, logprobs, status, reason, run_id in rows
        }
