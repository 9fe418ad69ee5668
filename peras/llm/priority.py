"""Which waiting request goes first when an endpoint's slots are all taken: an item's follow-up before a new item.

The engine may work on more items than `concurrency` requests in flight per URL (tasks/engine/workers.py, Workers: one
more for each waiting on the warehouse or a retry; an item sampling n answers asks n at once). With
first-come-first-served slots, every item's first request (a label) is answered before any item's second (its
confidence): on a slow server (the embedded CPU model answers a few requests a minute) no item finished for the first
256 labels, so nothing was committed and the progress line read "0 items, ETA ?" for half an hour. The engine marks each
request with how many requests its item has asked before it (`item_step`); a free slot goes to the waiting request with
the highest step, then to the longest waiting one. Items finish one after another, in about the order they began.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
from collections.abc import AsyncIterator
from contextvars import ContextVar

# How many requests the item being worked on has asked before this one (set by the engine; 0 outside it).
item_step: ContextVar[int] = ContextVar("peras_item_step", default=0)


class PrioritySlots:
    """At most `n` holders at once; a freed slot goes to the waiter with the highest priority, then the oldest."""

    def __init__(self, n: int) -> None:
        self._free = n
        self._waiters: list[tuple[int, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    @contextlib.asynccontextmanager
    async def held(self, priority: int) -> AsyncIterator[None]:
        await self.acquire(priority)
        try:
            yield
        finally:
            self.release()

    def try_acquire(self) -> bool:
        """Take a slot if one is free and nobody waits (then pair it with one `release`); no coroutine: per request."""
        if self._free > 0 and not self._waiters:
            self._free -= 1
            return True
        return False

    async def acquire(self, priority: int) -> None:
        """Wait for a slot (`held` without the context manager's cost, for the client's per-request path); pair
        every acquire that returns with one `release`."""
        if self._free > 0 and not self._waiters:
            self._free -= 1
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (-priority, next(self._order), waiter))
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():  # the slot was handed over as it was cancelled: pass it on
                self.release()
            raise

    def release(self) -> None:
        """Give a slot back: to the waiter with the highest priority, then the oldest."""
        while self._waiters:
            _, _, waiter = heapq.heappop(self._waiters)
            if not waiter.done():  # a cancelled waiter is skipped
                waiter.set_result(None)
                return
        self._free += 1
