"""Per-URL request slots shared by every PERAS process on a machine, held per request.

An endpoint (one base URL) allows `slots` requests in flight in total, whichever runs send them: two runs on one
vLLM server share its budget and finish together instead of one after the other. A slot is a byte of
`<directory>/<sha256(url)[:16]>.slots` locked with a POSIX record lock (fcntl.lockf) while one request is in
flight. The kernel releases a dead process's locks at once, so a run killed with kill -9 frees its slots
immediately (no lease to wait out). Record locks belong to the process, so the slots a process holds are
tracked here, in one registry per file, and the file is never closed while the process runs (closing any
descriptor of a file drops all of the process's locks on it).

Sharing: a process that holds every slot and keeps them busy would take each one back as soon as it freed it (its
next request is sent in the same turn of its event loop as the last answer is read), and another process, polling,
would wait until it ended (measured: two processes of 24 requests each on 4 slots ran one after the other). So a
process with requests waiting for a slot says so, with a lock on one of WAITERS bytes past the slots that no other
process holds, and a process counts the others saying so at most every SHARE_CHECK_S: while n others wait it holds at
most slots // (n + 1) (at least one), so a slot it frees above that share goes to a waiting process. Two runs on
one server share it and finish together (tests/test_endpoint_slots.py).

Hosts do not share these files: on several machines, each machine bounds what it sends (docs/scaling.md).
"""

from __future__ import annotations

import asyncio
import errno
import fcntl
import hashlib
import os
import random
import time
from collections import deque
from pathlib import Path

_REGISTRY: dict[Path, _SlotFile] = {}
POLL_S = (0.002, 0.05)  # first and longest wait between tries when every slot is taken
WAITERS = 32  # bytes where processes waiting for a slot say so, a byte each (more waiting processes count as 31)
WAITERS_AT = 1 << 24  # where those bytes start in the slot file (past any slot count; the file stays empty)
SHARE_CHECK_S = 0.05  # how often a process counts the others waiting (2 x WAITERS-1 system calls)


class _SlotFile:
    """The process's view of one URL's slot file: which bytes it holds."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        self.held: set[int] = set()
        self._candidates: deque[int] = deque()
        self._slots = 0
        self._waiting = 0  # this process's requests waiting for a slot
        self._said: int | None = None  # the byte it holds a shared lock on while they wait

    def wait_begins(self) -> None:
        """One more of this process's requests waits for a slot: say so."""
        self._waiting += 1
        self.say_waiting()

    def say_waiting(self) -> None:
        """Hold a shared lock on a waiters' byte no other process holds (tried again on each poll until one is had:
        another process counting holds each byte for an instant)."""
        if self._said is not None or not self._waiting:
            return
        for offset in range(WAITERS_AT, WAITERS_AT + WAITERS):
            if self._lock_at_once(offset):  # no one else holds it
                fcntl.lockf(self.fd, fcntl.LOCK_SH | fcntl.LOCK_NB, 1, offset, os.SEEK_SET)  # the process's own lock
                self._said = offset
                return

    def wait_ends(self) -> None:
        self._waiting -= 1
        if not self._waiting and self._said is not None:
            fcntl.lockf(self.fd, fcntl.LOCK_UN, 1, self._said, os.SEEK_SET)
            self._said = None

    def others_waiting(self) -> int:
        """How many other processes have requests waiting for one of this file's slots (at most WAITERS - 1)."""
        count = 0
        for offset in range(WAITERS_AT, WAITERS_AT + WAITERS):
            if offset == self._said:
                continue
            if self._lock_at_once(offset):
                fcntl.lockf(self.fd, fcntl.LOCK_UN, 1, offset, os.SEEK_SET)
            else:
                count += 1
        return count

    def _lock_at_once(self, offset: int) -> bool:
        """Lock byte `offset` for this process alone, without waiting; False when another process holds it."""
        try:
            fcntl.lockf(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset, os.SEEK_SET)
        except OSError as exc:
            if exc.errno not in (errno.EACCES, errno.EAGAIN):
                raise
            return False
        return True

    def try_lock(self, slots: int) -> int | None:
        """Lock a slot no one holds, trying the ones this process does not hold in turn; None when all are taken.

        O(1) while no other process holds slots: the next candidate is free.
        """
        if slots != self._slots:
            order = list(range(slots))
            random.shuffle(order)  # processes start at different slots
            self._candidates = deque(index for index in order if index not in self.held)
            self._slots = slots
        for _ in range(len(self._candidates)):
            index = self._candidates.popleft()
            try:
                fcntl.lockf(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, index, os.SEEK_SET)
            except OSError as exc:
                self._candidates.append(index)  # another process holds it: try it again later
                if exc.errno in (errno.EACCES, errno.EAGAIN):
                    continue
                raise
            self.held.add(index)
            return index
        return None

    def unlock(self, index: int) -> None:
        fcntl.lockf(self.fd, fcntl.LOCK_UN, 1, index, os.SEEK_SET)
        self.held.discard(index)
        if index < self._slots:
            self._candidates.append(index)


def slot_file_for(directory: Path, url: str) -> Path:
    """Where the slots of one base URL live (credentials never reach the file name: it is a hash)."""
    return directory / f"{hashlib.sha256(url.encode()).hexdigest()[:16]}.slots"


class EndpointSlots:
    """One URL's machine-wide slots: `index = await slots.acquire()` ... `slots.release(index)` around a request."""

    def __init__(self, directory: Path, url: str, slots: int) -> None:
        path = slot_file_for(directory, url).resolve()
        if path not in _REGISTRY:
            _REGISTRY[path] = _SlotFile(path)
        self._file = _REGISTRY[path]
        self.slots = slots
        self.waited_s = 0.0  # time spent waiting for another process's slots (reported by the engine)
        # Slots released during this turn of the event loop, still locked: the next request of the turn (an item's
        # next one is sent in the same turn as its last answer is read) takes one without the two system calls of
        # unlocking and locking again; unlocked as the turn ends (`cool`). A request in flight always holds its own
        # slot, so the machine-wide bound holds; a warm slot is only held a little longer.
        self._warm: list[int] = []
        self._cooling: asyncio.Handle | None = None
        self._share = slots  # the most this process may hold while others wait (module doc), and when to count again
        self._share_at = 0.0

    def try_acquire(self) -> int | None:
        """A free slot's index at once, or None when every slot is held or this process holds its share (then
        `await acquire()`)."""
        now = time.monotonic()
        if now >= self._share_at:
            self._share_at = now + SHARE_CHECK_S
            self._share = max(1, self.slots // (1 + self._file.others_waiting()))
        held = len(self._file.held)
        if self._warm and held - len(self._warm) < self._share:
            return self._warm.pop()
        if held >= self._share:
            return None
        return self._file.try_lock(self.slots)

    async def acquire(self) -> int:
        """A free slot's index; polls (2-50 ms) while other processes hold every slot (or this one its share)."""
        delay = POLL_S[0]
        self._file.wait_begins()
        try:
            while True:
                index = self.try_acquire()
                if index is not None:
                    return index
                await asyncio.sleep(delay)
                self.waited_s += delay
                delay = min(delay * 2, POLL_S[1])
                self._file.say_waiting()
        finally:
            self._file.wait_ends()

    def release(self, index: int) -> None:
        """Give the slot back: at once off an event loop, else as the loop's turn ends unless taken again."""
        if self._cooling is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                self._file.unlock(index)
                return
            self._cooling = loop.call_soon(self.cool)
        self._warm.append(index)

    def cool(self) -> None:
        """Unlock the slots released and not taken again (the end of the loop's turn; the client's close)."""
        if self._cooling is not None:
            self._cooling.cancel()
            self._cooling = None
        while self._warm:
            self._file.unlock(self._warm.pop())

    def held(self) -> int:
        """Slots this process holds on the URL now."""
        return len(self._file.held)
