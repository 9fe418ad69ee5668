"""An endpoint's slots go to an item's follow-up request before a new item's first (peras/llm/priority.py)."""

from __future__ import annotations

import asyncio

import pytest

from peras.llm.priority import PrioritySlots

pytestmark = pytest.mark.core


def test_a_freed_slot_goes_to_the_highest_priority_then_the_oldest_waiter():
    order: list[str] = []

    async def main() -> None:
        slots = PrioritySlots(1)
        release = asyncio.Event()

        async def holder() -> None:
            async with slots.held(0):
                await release.wait()

        async def request(name: str, priority: int) -> None:
            async with slots.held(priority):
                order.append(name)

        first = asyncio.create_task(holder())
        await asyncio.sleep(0)
        waiting = [
            asyncio.create_task(request(n, p)) for n, p in [("a0", 0), ("b0", 0), ("a1", 1), ("c0", 0), ("b1", 1)]
        ]
        await asyncio.sleep(0)
        release.set()
        await asyncio.gather(first, *waiting)

    asyncio.run(main())
    assert order == ["a1", "b1", "a0", "b0", "c0"]


def test_a_cancelled_waiter_gives_up_its_place_and_no_slot_is_lost():
    async def main() -> list[str]:
        slots = PrioritySlots(1)
        got: list[str] = []
        release = asyncio.Event()

        async def holder() -> None:
            async with slots.held(0):
                await release.wait()

        async def request(name: str, priority: int) -> None:
            async with slots.held(priority):
                got.append(name)

        first = asyncio.create_task(holder())
        await asyncio.sleep(0)
        doomed = asyncio.create_task(request("doomed", 5))
        kept = asyncio.create_task(request("kept", 0))
        await asyncio.sleep(0)
        doomed.cancel()
        release.set()
        await asyncio.gather(first, kept)
        with pytest.raises(asyncio.CancelledError):
            await doomed
        # both slots' worth of work went through and the one slot is free again
        async with slots.held(0):
            got.append("after")
        return got

    assert asyncio.run(main()) == ["kept", "after"]
