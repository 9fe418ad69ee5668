"""Issue 49: a stage's keys and planned columns come from its declaration, not restated by hand: the engine reads
them from the items' attributes of those names (tasks/engine/stages.py: item_key, declared_frame)."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl
import pytest

from tasks.engine.stage import declaration
from tasks.engine.stages import declared_frame, item_key
from tasks.personas.asking import ItemAsk
from tasks.priming.asking import BatchItem

pytestmark = pytest.mark.core


def test_an_items_key_is_its_declared_keys_in_order_unless_it_gives_its_own():
    assert item_key("personas", ItemAsk("HA", 7, 2)) == ("HA", 7, 2)

    @dataclass(frozen=True)
    class Own:
        key: tuple[str, ...]

    assert item_key("personas", Own(("x", "y"))) == ("x", "y")


def test_the_planned_frame_has_the_declared_columns_and_types():
    frame = declared_frame(declaration("personas"), [ItemAsk("HA", 7, 2), ItemAsk("LA", 1, 0)])
    assert frame.schema == {"personality": pl.Utf8, "item_id": pl.Int32, "sample_index": pl.Int32}
    assert frame.rows() == [("HA", 7, 2), ("LA", 1, 0)]
    empty = declared_frame(declaration("personas"), [])
    assert (empty.columns, empty.height) == (["personality", "item_id", "sample_index"], 0)
    batches = declared_frame(declaration("priming"), [BatchItem("q1", 0, 2, 1, "HA", "HT", ("d1", "d2"))])
    assert batches.columns == ["query_id", "trial", "n_prologue", "n_epilogue", "personality", "condition", "doc_ids"]
    assert batches.rows() == [("q1", 0, 2, 1, "HA", "HT", ["d1", "d2"])]
