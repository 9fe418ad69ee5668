"""metrics_vs_default and metrics_oracle: each personality against default, and the best one per metric."""

from __future__ import annotations

import math

import pytest

from tests.metrics_fixtures import Judgment, clear_judgments, fresh_warehouse, load_judgments, view

pytestmark = pytest.mark.core

# three personalities of one run and setting on the same four pairs (relevance 0, 1, 2, 3)
LABELS = {
    "default": [(0, 90.0), (1, 90.0), (1, 90.0), (1, 90.0)],  # 2 of 4 right
    "LA": [(0, 90.0), (1, 90.0), (2, 90.0), (2, 90.0)],  # 3 of 4 right
    "HN": [(0, 60.0), (1, 60.0), (2, 60.0), (2, 60.0)],  # 3 of 4 right, less sure
}


@pytest.fixture(scope="module")
def con():
    connection = fresh_warehouse()
    rows = [
        Judgment("run", personality, cot, "verbalized", "q1", f"d{i}", i, label, confidence)
        for personality, answers in LABELS.items()
        for i, (label, confidence) in enumerate(answers)
        for cot in (False, True)
    ]
    # a personality of another setting without a default: it has no comparison row
    rows.append(Judgment("run", "HO", False, "logprob", "q1", "d0", 0, 0, 50.0))
    clear_judgments(connection)
    load_judgments(connection, rows)
    yield connection
    connection.close()


def test_each_personality_against_default_of_the_same_setting(con):
    frame = view(con, "metrics_vs_default").filter(cot=False, metric="accuracy").sort("personality")
    assert frame.select("personality", "value", "default_value", "delta", "is_better").rows() == [
        ("HN", 0.75, 0.5, 0.25, True),
        ("LA", 0.75, 0.5, 0.25, True),
    ]
    ece = view(con, "metrics_vs_default").filter(cot=False, metric="ece", personality="HN").row(0, named=True)
    # default: bin 9, p 0.9, acc 0.5 -> 0.4; HN: bin 6, p 0.6, acc 0.75 -> 0.15; lower is better
    assert abs(ece["default_value"] - 0.4) < 1e-12 and abs(ece["value"] - 0.15) < 1e-12
    assert ece["is_better"] is True and ece["is_higher_better"] is False


def test_personality_without_default_is_left_out(con):
    assert view(con, "metrics_vs_default").filter(personality="HO").height == 0
    assert set(view(con, "metrics_vs_default")["personality"]) == {"LA", "HN"}


def test_oracle_picks_the_best_personality_and_lists_ties(con):
    oracle = view(con, "metrics_oracle").filter(cot=False, confidence_method="verbalized")
    accuracy = oracle.filter(metric="accuracy").row(0, named=True)
    assert (accuracy["best_personality"], accuracy["best_value"], accuracy["n_tied"]) == ("HN", 0.75, 2)
    assert accuracy["tied_personalities"] == "HN,LA"
    assert (accuracy["default_value"], accuracy["delta_vs_default"], accuracy["n_personalities"]) == (0.5, 0.25, 3)
    # ece ties (|0.75 - 0.9| = |0.75 - 0.6|); nll does not: LA -(3 ln .9 + ln .1)/4, HN -(3 ln .6 + ln .4)/4
    assert oracle.filter(metric="ece").row(0, named=True)["tied_personalities"] == "HN,LA"
    nll = oracle.filter(metric="nll").row(0, named=True)
    assert nll["best_personality"] == "HN" and nll["n_tied"] == 1
    assert abs(nll["best_value"] + (3 * math.log(0.6) + math.log(0.4)) / 4) < 1e-12
    assert "coverage_confident" not in oracle["metric"].to_list()
    alone = view(con, "metrics_oracle").filter(confidence_method="logprob", metric="accuracy").row(0, named=True)
    assert (alone["best_personality"], alone["default_value"], alone["delta_vs_default"]) == ("HO", None, None)


def test_long_view_has_every_metric_of_every_group(con):
    long = view(con, "metrics_long")
    assert long.height == 7 * 19  # 3 personalities x 2 settings + 1 group, 19 metrics each
    assert long.filter(metric="coverage_confident")["is_higher_better"].null_count() == 7
