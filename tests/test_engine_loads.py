"""When the engine loads its journal into the warehouse while it asks (setting load_interval_s, issue 35).

A shard that closes waits until `load_interval_s` has passed since the asking began (or since the last load); the
shards closed by then are loaded together, with the file opened once. The last load runs as the asking ends, so a
run shorter than the interval loads once, and everything it asked is stored when the call returns. The toy stage
(tests/toy_stage.py) journals a shard every 2 answers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

import tasks.engine.engine as engine_module
from peras.settings import load_settings
from support.fake_openai import FakeOpenAI, Reply
from tests.toy_stage import toy

WORDS = ["ant", "bee", "cat", "dingo", "eel", "ferret", "gnu", "hare"]  # 8 answers: 4 shards of 2


def truthful(request: dict[str, Any]) -> Reply:
    word = request["messages"][0]["content"].split("the word ")[1].split("?")[0]
    return Reply(str(len(word)), delay_s=0.05)


@pytest.fixture
def loads(monkeypatch) -> list[int]:
    """The shards each load took, in order."""
    taken: list[int] = []
    load = engine_module.load_closed_shards

    def counted(warehouse: Path, shards_root: Path, identity: Any, shards: list[list[Path]]) -> int:
        taken.append(len(shards))
        return load(warehouse, shards_root, identity, shards)

    monkeypatch.setattr(engine_module, "load_closed_shards", counted)
    return taken


@pytest.mark.parametrize(("interval_s", "expected"), [(60.0, [4]), (0.0, None)])
def test_shards_wait_for_the_interval_and_load_together(tmp_path, monkeypatch, loads, interval_s, expected):
    monkeypatch.setenv("PERAS_ENDPOINT_SLOTS_DIR", str(tmp_path / "slots"))
    with FakeOpenAI(truthful) as server:
        settings = load_settings(
            warehouse=tmp_path / "peras.duckdb",
            base_urls=[server.base_url],
            model="fake-model",
            concurrency=1,
            load_interval_s=interval_s,
        )
        result = toy(WORDS, settings=settings)
    assert (result["n_items"], result["n_failures"]) == (8, 0)
    if expected is not None:
        assert loads == expected  # nothing loaded while asking (the run is shorter than the interval), then all at once
    else:
        assert loads[0] == 1 and sum(loads) == 4 and len(loads) >= 2  # the first shard loaded as it closed
    con = duckdb.connect(str(settings.warehouse), read_only=True)
    try:
        stored = con.execute("select word, n_letters from toy_answers order by word").fetchall()
    finally:
        con.close()
    assert stored == [(word, len(word)) for word in WORDS]
    assert list(settings.shards.rglob("*.jsonl")) == []  # every shard loaded, then deleted
