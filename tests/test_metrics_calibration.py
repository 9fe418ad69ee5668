"""Calibration and thresholding views against NumPy references, and the TH-Score against the study's Table 4."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from support.reference_metrics import reference_calibration, reference_thresholds
from tests.metrics_fixtures import (
    GROUPS,
    assert_close,
    clear_judgments,
    frames_by_key,
    fresh_warehouse,
    group_key,
    judgments_of,
    load_judgments,
    remembered,
    rows_by_key,
    scored,
    view,
)

pytestmark = pytest.mark.core

# the study's Table 4: (eps, acc, share %, TH-Score), all as printed (rounded)
TABLE_4 = [
    (0.05, 1.00, 37.4, 12.14),
    (0.10, 0.91, 68.6, 17.52),
    (0.10, 0.83, 38.0, 7.55),
    (0.10, 0.54, 43.1, 0.80),
    (0.10, 0.20, 88.9, -11.64),
]


@pytest.fixture(scope="module")
def con():
    connection = fresh_warehouse()
    yield connection
    connection.close()


def rounding_box(acc: float, share: float) -> list[tuple[float, float]]:
    """The corners of the (acc, share) values that print as (acc, share): TH is monotone in each."""
    accs = [max(acc - 0.005, 0.0), min(acc + 0.005, 1.0)]
    return [(a, s) for a in accs for s in (share - 0.05, share + 0.05)]


@pytest.mark.parametrize(("eps", "acc", "share", "th"), TABLE_4)
def test_th_interval_score_reproduces_table_4(con, eps, acc, share, th):
    corners = rounding_box(acc, share)
    values = [con.execute("select th_interval_score(?, ?)", [a, s]).fetchall()[0][0] for a, s in corners]
    assert min(values) - 0.005 <= th <= max(values) + 0.005, (values, th)


@pytest.mark.parametrize(("eps", "acc", "share", "th"), TABLE_4)
def test_plain_formula_does_not_reproduce_table_4(eps, acc, share, th):
    # (e^(acc - 0.5) - 1) * share, the formula as usually written: twice the table's values
    values = [(math.exp(a - 0.5) - 1) * s for a, s in rounding_box(acc, share)]
    assert not min(values) - 0.005 <= th <= max(values) + 0.005


def realise(acc: float, share: float, th: float, n: int = 10_000) -> tuple[int, int]:
    """Whole counts (judgments in the high tail, hits among them) that print as the row and give its TH."""
    for n_high in range(round((share - 0.05) * n / 100), round((share + 0.05) * n / 100) + 1):
        for n_hits in range(n_high + 1):
            a, s = n_hits / n_high, 100 * n_high / n
            if round(a, 2) == acc and round(s, 1) == share and round((math.exp(a - 0.5) - 1) * s / 2, 2) == th:
                return n_high, n_hits
    raise AssertionError("no whole counts realise this row")


@pytest.mark.parametrize(("eps", "acc", "share", "th"), TABLE_4)
def test_calibration_view_gives_table_4_th_scores(con, eps, acc, share, th):
    # a judge that states 100 on the high-tail judgments and 50 (in no tail) on the rest, as LLMs do
    n = 10_000
    n_high, n_hits = realise(acc, share, th, n)
    cells = [(1, 1, 100.0)] * n_hits + [(1, 2, 100.0)] * (n_high - n_hits) + [(1, 1, 50.0)] * (n - n_high)
    clear_judgments(con)
    load_judgments(con, judgments_of([cells]))
    row = view(con, f"select * from th_score_at({eps})").row(0, named=True)
    assert (row["th_n_high"], row["th_n_low"]) == (n_high, 0)
    assert round(row["th_acc_high"], 2) == acc and round(row["th_share_high"], 1) == share
    assert round(row["th_score"], 2) == th
    if eps == 0.10:
        assert view(con, "metrics_calibration")["th_score"][0] == row["th_score"]


def test_low_tail_counts_a_wrong_label_as_a_hit(con):
    # high tail: 2 right of 2 -> acc 1; low tail: 1 wrong + 1 right -> acc 0.5; shares 50 % and 50 %
    clear_judgments(con)
    load_judgments(con, judgments_of([[(1, 1, 95.0), (2, 2, 100.0), (1, 2, 3.0), (3, 3, 10.0)]]))
    row = view(con, "metrics_calibration").row(0, named=True)
    assert (row["th_acc_high"], row["th_share_high"], row["th_acc_low"], row["th_share_low"]) == (1.0, 50.0, 0.5, 50.0)
    assert math.isclose(row["th_score"], (math.exp(0.5) - 1) * 50 / 2 + 0, rel_tol=1e-12)


def test_th_score_at_rejects_overlapping_tails(con):
    clear_judgments(con)
    load_judgments(con, judgments_of([[(1, 1, 95.0)]]))
    with pytest.raises(Exception, match="eps must be in"):
        con.execute("select * from th_score_at(0.5)").fetchall()


def reference_bins(correct: np.ndarray, confidence: np.ndarray) -> list[tuple[int, float | None, float | None]]:
    """(n, mean p, accuracy) of the 10 equal-width bins."""
    bins = np.minimum(np.floor(confidence / 10), 9)
    out = []
    for b in range(10):
        members = bins == b
        out.append(
            (
                int(members.sum()),
                float(np.mean(confidence[members] / 100)) if members.any() else None,
                float(np.mean(correct[members])) if members.any() else None,
            )
        )
    return out


# each distinct group's references computed once (hypothesis draws the same small groups again and again)
calibration_of = remembered(reference_calibration)
thresholds_of = remembered(reference_thresholds)
bins_of = remembered(reference_bins)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(groups=GROUPS)
def test_calibration_and_thresholds_match_numpy_on_random_groups(con, groups):
    clear_judgments(con)
    load_judgments(con, judgments_of(groups))
    calibration = rows_by_key(view(con, "metrics_calibration"))
    at_80 = rows_by_key(view(con, "metrics_thresholds"))
    at_05 = rows_by_key(view(con, "select * from th_score_at(0.05)"))
    bins = frames_by_key(view(con, "metrics_calibration_bins"))
    curve = frames_by_key(view(con, "metrics_threshold_curve"))
    for index, cells in enumerate(groups):
        key = group_key(index)
        correct, confidence = scored(cells)
        for column, expected in calibration_of(correct, confidence).items():
            assert_close(calibration[key][column], expected, f"group {index} {column}")
        for column, expected in thresholds_of(correct, confidence, 80).items():
            assert_close(at_80[key][column], expected, f"group {index} {column}")
        if len(confidence):
            assert_close(
                at_05[key]["th_score"],
                calibration_of(correct, confidence, eps=0.05)["th_score"],
                f"group {index} th_score at 0.05",
            )
        mine = bins[key].sort("bin")
        for (n, mean_p, accuracy), row in zip(bins_of(correct, confidence), mine.iter_rows(named=True), strict=True):
            assert row["n_judgments"] == n
            assert_close(row["mean_p"], mean_p, f"group {index} bin {row['bin']} mean_p")
            assert_close(row["accuracy"], accuracy, f"group {index} bin {row['bin']} accuracy")
        points = curve[key]
        assert sorted(points["threshold"].to_list()) == [5.0 * k for k in range(21)]
        for row in points.iter_rows(named=True):
            covered = confidence >= row["threshold"]
            assert row["n_covered"] == int(covered.sum())
            assert_close(row["coverage"], float(covered.mean()) if len(confidence) else None, "coverage")
            assert_close(row["accuracy"], float(correct[covered].mean()) if covered.any() else None, "accuracy")
        assert points.height == 21


# (relevance, label, confidence) of one group, and calibration numbers worked out by hand
BY_HAND = [
    # right at 100, wrong at 0: perfectly calibrated and sharp
    ([(1, 1, 100.0), (1, 2, 0.0)], {"ece": 0.0, "mce": 0.0, "brier": 0.0, "ace": 0.0}),
    # wrong at 100: the clip keeps the NLL finite: -ln(1e-6)
    ([(1, 2, 100.0)], {"brier": 1.0, "nll": -math.log(1e-6), "ece": 1.0}),
    # ten tied confidences: one adaptive bin, not ten
    ([(1, 1, 70.0)] * 7 + [(1, 2, 70.0)] * 3, {"n_ace_bins": 1, "ace": 0.0, "ece": 0.0}),
    # 80 sits in the [80, 90) bin, 100 in the last one
    ([(1, 1, 80.0), (1, 1, 100.0)], {"ece": (0.2 + 0.0) / 2, "mce": 0.2}),
]


@pytest.mark.parametrize(("cells", "expected"), BY_HAND)
def test_calibration_by_hand(con, cells, expected):
    clear_judgments(con)
    load_judgments(con, judgments_of([cells]))
    row = view(con, "metrics_calibration").row(0, named=True)
    for column, value in expected.items():
        assert_close(row[column], value, column)


def test_certainty_split_takes_any_threshold(con):
    clear_judgments(con)
    load_judgments(con, judgments_of([[(1, 1, 95.0), (1, 2, 85.0), (1, 1, 60.0), (2, 2, None)]]))
    row = view(con, "select * from certainty_split(90)").row(0, named=True)
    assert (row["n_confident"], row["accuracy_confident"], row["coverage_confident"]) == (1, 1.0, 1 / 3)
    assert (row["n_unconfident"], row["accuracy_unconfident"]) == (2, 0.5)
    assert row["n_confidence_missing"] == 1
