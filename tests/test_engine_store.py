"""The engine's door to the warehouse (tasks/engine/store.py): a reader kept warm between look-ups and closed once
idle, and stored answers looked up many at a time even at a small concurrency. Real DuckDB files and processes."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from peras.warehouse import open_migrated
from support.fake_openai import FakeOpenAI, instant
from tasks.engine import store
from tasks.engine.store import AnswerCache, WarehouseThread
from tests.test_integrity import judge_cli, sample  # noqa: F401 - the fixture


def writable_from_another_process(warehouse: Path) -> bool:
    """Whether another process can open the warehouse read-write right now (no wait)."""
    script = "import duckdb, sys; duckdb.connect(sys.argv[1]).close()"
    return subprocess.run([sys.executable, "-c", script, str(warehouse)], capture_output=True).returncode == 0


def until(condition, timeout_s: float = 10.0) -> bool:
    """Poll `condition` until it holds or `timeout_s` passes (bounds that hold on a loaded 2-core machine)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


@pytest.mark.core
def test_the_reader_stays_open_between_lookups_and_closes_once_idle(tmp_path, monkeypatch):
    warehouse = tmp_path / "w.duckdb"
    with open_migrated(warehouse):
        pass
    # Held: with a minute's idle time (no bound of a loaded machine is that tight), two look-ups share one
    # connection (no open, no cold read, per look-up), and another process's writer waits meanwhile.
    monkeypatch.setattr(store, "IDLE_S", 60.0)
    thread = WarehouseThread(warehouse)
    try:
        first = thread.run(thread.reading)  # kept here, so a new connection could not reuse its address
        second = thread.run(thread.reading)
        assert second is first
        assert not writable_from_another_process(warehouse)
    finally:
        thread.close()
    assert thread._reader is None  # close() released it and cancelled the pending release
    assert writable_from_another_process(warehouse)
    # Released once idle, with no close: another process can write again.
    monkeypatch.setattr(store, "IDLE_S", 0.2)
    thread = WarehouseThread(warehouse)
    try:
        assert thread.run(lambda: thread.reading() is not None)
        assert until(lambda: thread._reader is None)
        assert writable_from_another_process(warehouse)
    finally:
        thread.close()


@pytest.mark.integration
def test_a_fully_cached_rerun_at_concurrency_one_looks_answers_up_together(sample, capsys, monkeypatch):  # noqa: F811
    batches: list[int] = []
    lookup = AnswerCache._lookup

    def recorded(self: AnswerCache, request_ids: list[str]) -> dict:
        batches.append(len(request_ids))
        return lookup(self, request_ids)

    one = ("--personality", "default", "--cot", "without", "--concurrency", "1")
    with FakeOpenAI(instant) as server:
        first = judge_cli(capsys, sample.warehouse, server, "--run-name", "first", *one)
        assert first.exit_code == 0, first.err
        sent = len(server.chat_requests)
        monkeypatch.setattr(AnswerCache, "_lookup", recorded)
        second = judge_cli(capsys, sample.warehouse, server, "--run-name", "second", *one)
        assert second.exit_code == 0, second.err
        assert len(server.chat_requests) == sent
    assert first.out.startswith("first: 40 judgments (40 new; 80 requests sent, 0 reused)")
    assert second.out.startswith("second: 40 judgments (40 new; 0 requests sent, 80 reused)")
    # every item's label look-up in one batch, then every confidence look-up (at concurrency 1 this was 80 batches
    # of one: items in flight were bounded by the concurrency, not by the requests in flight)
    assert batches == [40, 40]


@pytest.mark.core
def test_the_cache_filter_says_certainly_not_stored_and_the_search_decides_the_rest():
    cache = AnswerCache(None, "m")  # type: ignore[arg-type] - no look-up: only what add() noted
    stored = ["a1b2c3" + "0" * 58, "ffffff" + "1" * 58]
    cache.add(stored)
    same_top = "a1b2c3" + "2" * 58  # its first 24 bits are a stored one's: the filter lets it through, the search not
    other_top = "a1b2c4" + "0" * 58
    assert [cache.might_have(r) for r in [*stored, same_top, other_top]] == [True, True, False, False]
    assert sum(bin(byte).count("1") for byte in cache._filter) == 2


def test_an_asks_constrained_copy_keeps_every_field_but_the_shape() -> None:
    # The engine's per-request copy is built directly (not dataclasses.replace): a field added to Ask must be copied.
    import dataclasses

    from tasks.engine.spec import Ask

    spec = Ask(**{field.name: object() for field in dataclasses.fields(Ask)})
    params = {"extra_body": {"structured_outputs": {"choice": ["0", "1"]}}}
    assert spec.constrained(params) == dataclasses.replace(spec, params=params, shape=None)


def test_the_engine_remembers_the_last_constraint_only_for_the_same_parameters_and_shape() -> None:
    # Alternating parameter sets and shapes each get their own constrained copy; the same pair again, the same copy.
    from types import SimpleNamespace

    from peras.llm.constraints import answer_shape, constrain
    from tasks.engine.engine import Engine

    engine = SimpleNamespace(_last_constraint=None, answer_format="vllm")
    p1, p2 = {"temperature": 0.0}, {"temperature": 0.0}  # equal, not the same object
    s1, s2 = answer_shape("label_nocot"), answer_shape("confidence")
    seen = []
    for params, shape in [(p1, s1), (p1, s1), (p1, s2), (p2, s2), (p2, s1), (p2, s1)]:
        found = Engine._constrained(engine, params, shape)  # type: ignore[arg-type]
        assert found == constrain(params, shape, "vllm")
        seen.append(found)
    assert seen[1] is seen[0] and seen[5] is seen[4]
    assert seen[2]["extra_body"] != seen[1]["extra_body"] and seen[3] is not seen[2] and seen[4] is not seen[3]
