"""Sakai's confidence reliability (metrics_reliability) against a NumPy reference and the worked example."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from support.reference_metrics import reference_reliability
from tests.metrics_fixtures import (
    GROUPS,
    assert_close,
    clear_judgments,
    fresh_warehouse,
    group_key,
    judgments_of,
    load_judgments,
    rows_by_key,
    scored,
    view,
)

pytestmark = pytest.mark.core

# the worked example: (pair, relevance, label, confidence)
TOY = [("a", 3, 3, 90.0), ("b", 2, 2, 60.0), ("c", 1, 2, 85.0), ("d", 0, 0, 40.0), ("e", 2, 0, 30.0)]


@pytest.fixture(scope="module")
def con():
    connection = fresh_warehouse()
    yield connection
    connection.close()


def test_worked_example_gives_the_published_numbers(con):
    clear_judgments(con)
    load_judgments(con, judgments_of([[(relevance, label, confidence) for _, relevance, label, confidence in TOY]]))
    row = view(con, "metrics_reliability").row(0, named=True)
    assert (row["n_correct"], row["n_incorrect"]) == (3, 2)  # I+ = a, b, d; I- = c, e
    assert abs(row["overconfidence"] - 1.15) < 1e-12  # 0.85 + 0.30
    assert abs(row["underconfidence"] - 1.1) < 1e-12  # 0.10 + 0.40 + 0.60
    assert abs(row["ro"] - 0.425) < 1e-12  # 1 - 1.15 / 2
    assert round(row["ru"], 4) == 0.6333  # 1 - 1.1 / 3
    assert abs(row["ru"] - 19 / 30) < 1e-12
    # 0.508 as published: the digits given (the value is 0.50866..., truncated there, not rounded)
    assert int(row["hmr"] * 1000) / 1000 == 0.508
    assert abs(row["hmr"] - 2 * 0.425 * (19 / 30) / (0.425 + 19 / 30)) < 1e-12


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(groups=GROUPS)
def test_reliability_matches_numpy_on_random_groups(con, groups):
    clear_judgments(con)
    load_judgments(con, judgments_of(groups))
    rows = rows_by_key(view(con, "metrics_reliability"))
    assert len(rows) == len(groups)
    for index, cells in enumerate(groups):
        row = rows[group_key(index)]
        correct, confidence = scored(cells)
        assert row["n_label_failures"] == sum(label is None for _, label, _ in cells)
        assert row["n_confidence_missing"] == sum(label is not None and c is None for _, label, c in cells)
        assert row["n_scored_confidence"] == len(confidence)
        for column, expected in reference_reliability(correct, confidence / 100).items():
            assert_close(row[column], expected, f"group {index} {column}")


# (relevance, label, confidence) of one group, and the reliability it must get
EDGES = [
    # every label right: I- empty, RO = 1 by definition
    ([(1, 1, 100.0), (2, 2, 50.0)], {"ro": 1.0, "ru": 0.75, "hmr": 2 * 0.75 / 1.75}),
    # every label wrong: I+ empty, RU = 1
    ([(1, 2, 20.0), (2, 3, 60.0)], {"ro": 0.6, "ru": 1.0}),
    # wrong at full confidence, right at zero confidence: RO = RU = 0, and HMR = 0 (not 0 / 0)
    ([(1, 2, 100.0), (2, 2, 0.0)], {"ro": 0.0, "ru": 0.0, "hmr": 0.0}),
    # no confidence at all: nothing to score, null rather than a made-up 1
    ([(1, 1, None), (2, 2, None)], {"ro": None, "ru": None, "hmr": None}),
]


@pytest.mark.parametrize(("cells", "expected"), EDGES)
def test_empty_sides_follow_the_definition(con, cells, expected):
    clear_judgments(con)
    load_judgments(con, judgments_of([cells]))
    row = view(con, "metrics_reliability").row(0, named=True)
    for column, value in expected.items():
        assert_close(row[column], value, column)
