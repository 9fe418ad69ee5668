"""The shard journal writes the lines of one event-loop iteration together, requests before outcomes."""

from __future__ import annotations

import asyncio
import errno
import os
import threading
from pathlib import Path

import orjson
import pytest

from tasks.engine.shards import MAX_SYNCING, ShardJournal
from tasks.engine.spec import RunIdentity

pytestmark = pytest.mark.core  # starts nothing

IDENTITY = RunIdentity("w1", "judge", "r1", "run", "m", "openai")


def lines(directory: Path, kind: str) -> list[dict[str, object]]:
    return [
        orjson.loads(line) for p in sorted(directory.glob(f"*.{kind}.jsonl")) for line in p.read_bytes().splitlines()
    ]


def test_lines_of_one_loop_iteration_reach_the_file_at_the_next(tmp_path: Path) -> None:
    closed: list[list[Path]] = []
    journal = ShardJournal(tmp_path, IDENTITY, 3, on_closed=closed.append)

    async def journal_some() -> list[tuple[int, int]]:
        seen = []
        for i in range(2):
            journal.request({"request_id": f"q{i}"})
            journal.outcome({"item": i})
        seen.append((len(lines(tmp_path, "requests")), len(lines(tmp_path, "outcomes"))))  # not yet written
        await asyncio.sleep(0)
        seen.append((len(lines(tmp_path, "requests")), len(lines(tmp_path, "outcomes"))))  # the loop turned
        journal.request({"request_id": "q2"})
        journal.outcome({"item": 2})  # the shard's third outcome: rotated, everything written and synced
        seen.append((len(lines(tmp_path, "requests")), len(lines(tmp_path, "outcomes"))))
        return seen

    assert asyncio.run(journal_some()) == [(0, 0), (2, 2), (3, 3)]
    assert len(closed) == 1
    assert lines(tmp_path, "requests") == [
        {"warehouse_id": "w1", "run_id": "r1", "request_id": f"q{i}"} for i in range(3)
    ]
    assert [row["item"] for row in lines(tmp_path, "outcomes")] == [0, 1, 2]


def test_outside_an_event_loop_each_line_is_written_at_once(tmp_path: Path) -> None:
    journal = ShardJournal(tmp_path, IDENTITY, 10)
    journal.request({"request_id": "q0"})
    assert lines(tmp_path, "requests") == [{"warehouse_id": "w1", "run_id": "r1", "request_id": "q0"}]
    journal.close()


def test_a_rotation_in_an_event_loop_syncs_the_closed_files_off_the_loop(tmp_path: Path, monkeypatch) -> None:
    synced: list[tuple[str, bool]] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append((Path(os.readlink(f"/proc/self/fd/{fd}")).name, threading.current_thread() is loop_thread))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    loop_thread = threading.current_thread()
    closed: list[list[Path]] = []
    journal = ShardJournal(tmp_path, IDENTITY, 1, on_closed=closed.append)

    async def rotate_once() -> None:
        journal.request({"request_id": "q0"})
        journal.outcome({"item": 0})  # the shard's only outcome: rotated

    asyncio.run(rotate_once())
    # the loop's executor finished before asyncio.run returned: both files synced, neither on the loop's thread
    assert sorted(synced) == sorted((path.name, False) for path in closed[0])
    assert lines(tmp_path, "outcomes") == [{"warehouse_id": "w1", "run_id": "r1", "item": 0}]


def test_a_shard_that_cannot_be_synced_fails_the_next_line(tmp_path: Path, monkeypatch) -> None:
    def fsync(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", fsync)
    journal = ShardJournal(tmp_path, IDENTITY, 1, on_closed=lambda files: None)

    async def go_on_after_a_rotation() -> None:
        journal.outcome({"item": 0})  # rotated: its files are synced on the executor's thread
        for _ in range(100):
            await asyncio.sleep(0.01)
            journal.request({"request_id": "q1"})

    with pytest.raises(OSError, match="Input/output error"):
        asyncio.run(go_on_after_a_rotation())


def test_shards_closing_faster_than_the_disk_syncs_them_are_synced_on_the_loop(tmp_path: Path, monkeypatch) -> None:
    released = threading.Event()
    on_loop: list[int] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        if threading.current_thread() is threading.main_thread():
            on_loop.append(fd)
        else:
            released.wait(10)  # a slow disk: the executor's syncs are still running
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    journal = ShardJournal(tmp_path, IDENTITY, 1, on_closed=lambda files: None)

    async def rotate_six_times() -> int:
        for i in range(6):
            journal.outcome({"item": i})  # each its own shard
        synced_on_loop = len(on_loop)
        released.set()
        return synced_on_loop

    # MAX_SYNCING (4) shards on the executor at once; the next two synced where they closed (two files each)
    assert asyncio.run(rotate_six_times()) == (6 - MAX_SYNCING) * 2
    assert [row["item"] for row in lines(tmp_path, "outcomes")] == list(range(6))
