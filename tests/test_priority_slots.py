"""An endpoint's slots go to an item's follow-up request before a new item's first (peras/llm/priority.py)."""

from __future__ import annotations

import asyncio

import pytest

from peras.llm.priority import PrioritySlots

pytestmark = pytest.mark.core


class OneSlotHeld:
    """One slot, held by a first task until `release` is set; `request(name, priority)` records when it gets it."""

    def __init__(self) -> None:
        self.slots = PrioritySlots(1)
        self.release = asyncio.Event()
        self.got: list[str] = []
        self.holder = asyncio.create_task(self._hold())

    async def _hold(self) -> None:
        async with self.slots.held(0):
            await self.release.wait()

    async def request(self, name: str, priority: int) -> None:
        async with self.slots.held(priority):
            self.got.append(name)


def test_a_freed_slot_goes_to_the_highest_priority_then_the_oldest_waiter():
    async def main() -> list[str]:
        held = OneSlotHeld()
        await asyncio.sleep(0)
        waiting = [
            asyncio.create_task(held.request(n, p)) for n, p in [("a0", 0), ("b0", 0), ("a1", 1), ("c0", 0), ("b1", 1)]
        ]
        await asyncio.sleep(0)
        held.release.set()
        await asyncio.gather(held.holder, *waiting)
        return held.got

    assert asyncio.run(main()) == ["a1", "b1", "a0", "b0", "c0"]


def test_a_cancelled_waiter_gives_up_its_place_and_no_slot_is_lost():
    async def main() -> list[str]:
        held = OneSlotHeld()
        await asyncio.sleep(0)
        doomed = asyncio.create_task(held.request("doomed", 5))
        kept = asyncio.create_task(held.request("kept", 0))
        await asyncio.sleep(0)
        doomed.cancel()
        held.release.set()
        await asyncio.gather(held.holder, kept)
        with pytest.raises(asyncio.CancelledError):
            await doomed
        # both slots' worth of work went through and the one slot is free again
        await held.request("after", 0)
        return held.got

    assert asyncio.run(main()) == ["kept", "after"]


def test_try_acquire_takes_a_free_slot_only_when_nobody_waits_for_one():
    # The client's per-request path: a free slot is taken without a coroutine; a waiter keeps its turn.
    async def main() -> list[object]:
        slots = PrioritySlots(2)
        seen: list[object] = [slots.try_acquire(), slots.try_acquire(), slots.try_acquire()]  # two free, then none
        waiter = asyncio.create_task(slots.acquire(0))
        await asyncio.sleep(0)
        slots.release()  # the freed slot goes to the waiter, not to the next try
        seen.append(slots.try_acquire())
        await waiter
        slots.release()
        slots.release()
        seen.append(slots.try_acquire())  # free again, nobody waiting
        return seen

    assert asyncio.run(main()) == [True, True, False, False, True]
