"""The engine's worker pool (tasks/engine/workers.py, Workers): `concurrency` workers, one more for each waiting on
something other than a slot, none past the limit, and none before a pass has started or once it has stopped."""

from __future__ import annotations

import asyncio

import pytest

from tasks.engine.workers import MAX_STALLED, Workers

pytestmark = pytest.mark.core


def test_a_stall_adds_a_worker_and_its_end_makes_one_surplus():
    async def main() -> list[object]:
        seen: list[object] = []
        release = asyncio.Event()

        async def work() -> None:
            await release.wait()

        workers = Workers(2)
        workers.start(work)
        seen.append((workers.alive, workers.surplus()))
        workers.stall()  # one waits on the warehouse: a third takes up the asking
        seen.append((workers.alive, workers.surplus()))
        workers.unstall()  # its look-up answered: three asking for two, one is left over
        seen.append((workers.alive, workers.surplus()))
        release.set()
        await workers.wait()
        seen.append(workers.alive)
        return seen

    assert asyncio.run(main()) == [(2, False), (3, False), (3, True), 0]


def test_no_worker_past_the_limit_nor_after_the_pass_stopped():
    async def main() -> tuple[int, int]:
        async def work() -> None:
            await asyncio.sleep(0)

        workers = Workers(1)
        workers.stall()  # not started (no pass yet): nothing to add
        workers.unstall()
        workers.start(work)
        for _ in range(MAX_STALLED + 10):  # every worker waits on the warehouse
            workers.stall()
        at_limit = len(workers.tasks)
        await workers.wait()
        await workers.stop()
        workers.stall()  # a request a stage left running waits on a retry after the pass ended
        await asyncio.sleep(0)
        return at_limit, len(workers.tasks)

    assert asyncio.run(main()) == (1 + MAX_STALLED, 1 + MAX_STALLED)
