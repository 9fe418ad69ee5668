"""Wide tables fit 120 columns: split into parts of the same rows, the key columns repeated in each."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from cli.tables import WIDTH, TextTable, column_groups, print_text_table

pytestmark = pytest.mark.core


@pytest.mark.parametrize(
    ("widths", "n_keys", "width", "groups"),
    [
        # everything fits: one part
        ([10, 5, 5], 1, 120, [[0, 1, 2]]),
        # 1 + 13 for the key, then 23 per column: four fit in 120, the fifth starts a new part
        ([10, 20, 20, 20, 20, 20], 1, 100, [[0, 1, 2, 3], [0, 4, 5]]),
        # two key columns repeated in every part: 1 + 2 x 7 + 2 x 33 = 81 fits exactly in 81, not in 80
        ([4, 4, 30, 30, 30], 2, 81, [[0, 1, 2, 3], [0, 1, 4]]),
        ([4, 4, 30, 30, 30], 2, 80, [[0, 1, 2], [0, 1, 3], [0, 1, 4]]),
        # a column wider than the width still gets a part of its own
        ([10, 200, 5], 1, 120, [[0, 1], [0, 2]]),
    ],
)
def test_column_groups(widths, n_keys, width, groups):
    assert column_groups(widths, n_keys, width) == groups


def test_a_wide_table_prints_in_parts_that_fit_and_the_caption_once():
    table = TextTable(
        headers=["method", *(f"metric {i}" for i in range(13))],
        rows=[["majority", *(f"0.{i}123 (+0.012) [HA]" for i in range(13))]],
        right={f"metric {i}" for i in range(13)},
        caption="(delta against the default judge)",
    )
    out = io.StringIO()
    print_text_table(table, console=Console(file=out, width=WIDTH))
    lines = out.getvalue().splitlines()
    assert max(len(line) for line in lines) <= WIDTH
    assert sum("majority" in line for line in lines) == 4  # 13 columns of 25 in four parts
    assert [line.strip() for line in lines].count("(delta against the default judge)") == 1
    assert lines[-1].strip() == "(delta against the default judge)"
