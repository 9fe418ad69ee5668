"""Machine-wide request slots per URL (peras/llm/limits.py): a slot released is kept for the rest of the event loop's
turn (the next request of the turn takes it without unlocking and locking again), then unlocked for other processes;
two processes sharing a URL's slots never have more requests in flight than it allows. Real lock files, processes and
a real HTTP server."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from peras.llm.client import LLMClient
from peras.llm.limits import EndpointSlots, slot_file_for
from support.fake_openai import FakeOpenAI, Reply, instant

URL = "http://127.0.0.1:9/v1"


def locked_elsewhere(path: Path, index: int) -> bool:
    """Whether another process finds byte `index` of the slot file locked."""
    script = textwrap.dedent(
        """
        import fcntl, os, sys
        fd = os.open(sys.argv[1], os.O_RDWR)
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, int(sys.argv[2]), os.SEEK_SET)
        except OSError:
            sys.exit(1)
        """
    )
    return subprocess.run([sys.executable, "-c", script, str(path), str(index)]).returncode == 1


@pytest.mark.core
def test_a_released_slot_stays_warm_for_the_turn_then_is_unlocked(tmp_path):
    slots = EndpointSlots(tmp_path, URL, 2)
    path = slot_file_for(tmp_path, URL)

    async def turns() -> list[object]:
        seen: list[object] = []
        first = slots.try_acquire()
        assert first is not None
        slots.release(first)
        seen.append(locked_elsewhere(path, first))  # released, still held this turn
        again = slots.try_acquire()
        seen.append(again == first)  # taken again: the same slot, no new lock
        slots.release(first)
        await asyncio.sleep(0)  # the turn ends
        seen += [locked_elsewhere(path, first), slots.held()]
        return seen

    assert asyncio.run(turns()) == [True, True, False, 0]
    # Off an event loop, a release unlocks at once.
    index = slots.try_acquire()
    assert index is not None
    slots.release(index)
    assert (locked_elsewhere(path, index), slots.held()) == (False, 0)


@pytest.mark.core
def test_closing_the_client_unlocks_the_warm_slots(tmp_path):
    with FakeOpenAI(instant) as server:

        async def ask() -> int:
            client = LLMClient([server.base_url], "fake-model", concurrency=2, slots_dir=tmp_path)
            await client.chat([{"role": "user", "content": "hi"}])
            held = client._endpoints[0].slots.held()  # type: ignore[union-attr]
            await client.aclose()  # in the same turn as the answer: the slot is still warm here
            return held * 10 + client._endpoints[0].slots.held()  # type: ignore[union-attr]

        assert asyncio.run(ask()) == 10


SENDER = textwrap.dedent(
    """
    import asyncio, sys, time
    from pathlib import Path
    from peras.llm.client import LLMClient

    async def main():
        directory, name = Path(sys.argv[2]), sys.argv[3]
        (directory / f"ready-{name}").touch()
        while not (directory / "go").exists():  # both start sending together, imports done
            time.sleep(0.01)
        async with LLMClient([sys.argv[1]], "fake-model", concurrency=4, slots_dir=directory / "slots") as client:
            await asyncio.gather(*(client.chat([{"role": "user", "content": f"{name} {i}"}]) for i in range(48)))

    asyncio.run(main())
    """
)


@pytest.mark.integration
def test_two_processes_sharing_a_url_never_exceed_its_slots(tmp_path):
    with FakeOpenAI(lambda request: Reply(instant(request), delay_s=0.05)) as server:
        senders = [
            subprocess.Popen([sys.executable, "-c", SENDER, server.base_url, str(tmp_path), name], cwd=Path.cwd())
            for name in ("one", "two")
        ]
        deadline = time.monotonic() + 120
        while not all((tmp_path / f"ready-{name}").exists() for name in ("one", "two")):
            assert time.monotonic() < deadline and all(sender.poll() is None for sender in senders)
            time.sleep(0.01)
        (tmp_path / "go").touch()
        assert [sender.wait(timeout=120) for sender in senders] == [0, 0]
    # Sending together, 4 each would reach 8 in flight (as they do with a slot directory each: mutation-checked); the
    # URL's 4 shared slots hold them to 4, shared (peras/llm/limits.py, "Sharing": without it, measured, one process
    # took every slot back as it freed it and the other sent nothing until the first had ended).
    order = [request.body["messages"][0]["content"].split()[0] for request in server.chat_requests]  # type: ignore[index]
    assert (len(order), server.peak_in_flight) == (96, 4)
    # Past the first share count (50 ms: the first requests go as they come), they take turns: of requests 16-63 each
    # sent at least 18 (sharing gives ~24; without it, measured, 0 or 12: one took every slot back, or three of four).
    middle = order[16:64]
    assert min(middle.count("one"), middle.count("two")) >= 18, "".join(name[1] for name in order)
