"""Per-URL request slots shared by every PERAS process on a machine, held per request.

An endpoint (one base URL) allows `slots` requests in flight in total, whichever runs send them: two runs on one
vLLM server share its budget and finish together instead of one after the other. A slot is a byte of
`<directory>/<sha256(url)[:16]>.slots` locked with a POSIX record lock (fcntl.lockf) while one request is in
flight. The kernel releases a dead process's locks at once, so a run killed with kill -9 frees its slots
immediately (no lease to wait out). Record locks belong to the process, so the slots a process holds are
tracked here, in one registry per file, and the file is never closed while the process runs (closing any
descriptor of a file drops all of the process's locks on it).

Hosts do not share these files: on several machines, each machine bounds what it sends (docs/scaling.md).
"""

from __future__ import annotations

import asyncio
import errno
import fcntl
import hashlib
import os
import random
from collections import deque
from pathlib import Path

_REGISTRY: dict[Path, _SlotFile] = {}
POLL_S = (0.002, 0.05)  # first and longest wait between tries when every slot is taken


class _SlotFile:
    """The process's view of one URL's slot file: which bytes it holds."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        self.held: set[int] = set()
        self._candidates: deque[int] = deque()
        self._slots = 0

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

    def try_acquire(self) -> int | None:
        """A free slot's index at once, or None when every slot is held (then `await acquire()`)."""
        return self._file.try_lock(self.slots)

    async def acquire(self) -> int:
        """A free slot's index; polls (2-50 ms) while other processes hold every slot."""
        delay = POLL_S[0]
        while True:
            index = self._file.try_lock(self.slots)
            if index is not None:
                return index
            await asyncio.sleep(delay)
            self.waited_s += delay
            delay = min(delay * 2, POLL_S[1])

    def release(self, index: int) -> None:
        """Give the slot back."""
        self._file.unlock(index)

    def held(self) -> int:
        """Slots this process holds on the URL now."""
        return len(self._file.held)
