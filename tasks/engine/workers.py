"""The engine's worker pool: `concurrency` workers asking, one more for each waiting on something other than a
slot of the client, up to MAX_STALLED more (tasks/engine/engine.py explains why)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from typing import Any

MAX_STALLED = 256  # items worked on beyond the concurrency, at most, while others wait on the warehouse or a retry


class Workers:
    """The engine's workers, started for each pass: `concurrency` asking, plus one for each waiting on something other
    than a slot of the client (`stall`), up to `concurrency + MAX_STALLED`; a worker left over once a wait ends stops
    after its item. Between passes (before the first, after `stop`) no worker is added."""

    def __init__(self, concurrency: int) -> None:
        self.concurrency = max(1, concurrency)
        self.limit = 0
        self.work: Callable[[], Coroutine[Any, Any, None]] | None = None
        self.tasks: list[asyncio.Task[None]] = []
        self.alive = 0
        self.stalled = 0

    def start(self, work: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """`concurrency` workers running `work` (a pass)."""
        self.work, self.limit, self.tasks = work, self.concurrency + MAX_STALLED, []
        for _ in range(self.concurrency):
            self._add()

    def _add(self) -> None:
        self.alive += 1
        self.tasks.append(asyncio.get_running_loop().create_task(self._run()))

    async def _run(self) -> None:
        assert self.work is not None, "started"
        try:
            await self.work()
        finally:
            self.alive -= 1

    def surplus(self) -> bool:
        """Whether more workers are asking than the concurrency (the calling one should stop)."""
        return self.alive - self.stalled > self.concurrency

    def stall(self) -> None:
        """A worker waits on something other than a slot: another takes up the asking, if the limit allows."""
        self.stalled += 1
        if self.alive - self.stalled < self.concurrency and self.alive < self.limit:
            self._add()

    def unstall(self) -> None:
        self.stalled -= 1

    def waiting(self, started: bool) -> None:
        """The client's hook (`LLMClient.on_wait`): a request sleeps before a retry, holding no slot."""
        if started:
            self.stall()
        else:
            self.unstall()

    async def wait(self) -> None:
        """Until every worker, those added meanwhile too, has stopped; the first error raised."""
        while True:
            pending = [task for task in self.tasks if not task.done()]
            if not pending:
                break
            await asyncio.wait(pending, return_when=asyncio.FIRST_EXCEPTION)
            for task in self.tasks:
                if task.done() and not task.cancelled() and task.exception() is not None:
                    raise task.exception()  # type: ignore[misc]

    async def stop(self) -> None:
        """Cancel the workers still running and wait for them to unwind. No worker is added after: a request a stage
        left running (a sibling of a failed one) may still wait on the warehouse or a retry."""
        self.limit = 0
        for task in self.tasks:
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*self.tasks, return_exceptions=True)
