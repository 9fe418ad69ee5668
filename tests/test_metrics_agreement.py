"""Agreement views (metrics_agreement, metrics_confusion) against scikit-learn and `krippendorff`."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from sklearn.metrics import f1_score

from support.reference_metrics import AGREEMENT_COLUMNS, reference_agreement, reference_confusion
from tests.metrics_fixtures import (
    GROUPS,
    assert_close,
    clear_judgments,
    frames_by_key,
    fresh_warehouse,
    group_key,
    judgments_of,
    labelled,
    load_judgments,
    remembered,
    rows_by_key,
    view,
)

pytestmark = pytest.mark.core


# scikit-learn's input checks cost ~1 ms a call: each distinct group's references are computed once
agreement_of = remembered(reference_agreement)
confusion_of = remembered(reference_confusion)


@pytest.fixture(scope="module")
def con():
    connection = fresh_warehouse()
    yield connection
    connection.close()


def check_agreement(con, groups) -> None:
    """Every group's row of metrics_agreement and metrics_confusion equals the references."""
    clear_judgments(con)
    load_judgments(con, judgments_of(groups))
    rows = rows_by_key(view(con, "metrics_agreement"))
    confusion = frames_by_key(view(con, "metrics_confusion"))
    assert len(rows) == len(groups)
    for index, cells in enumerate(groups):
        key = group_key(index)
        row = rows[key]
        truth, label = labelled(cells)
        assert row["n_judgments"] == len(cells)
        assert row["n_label_failures"] == sum(lab is None for _, lab, _ in cells)
        assert row["n_scored"] == len(truth)
        for column, expected in agreement_of(truth, label).items():
            assert_close(row[column], expected, f"group {key} {column}")
        matrix = confusion[key]
        assert matrix.height == 16
        expected_matrix = confusion_of(truth, label)
        for relevance, lab, n in matrix.select("relevance", "label", "n_judgments").iter_rows():
            assert n == expected_matrix[relevance, lab], f"group {key} cell {relevance},{lab}"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(groups=GROUPS)
def test_agreement_matches_sklearn_and_krippendorff_on_random_groups(con, groups):
    check_agreement(con, groups)


# (relevance, label) pairs of one group, and what the view must say for them
DEGENERATE = [
    # one class on both sides: kappa undefined (sklearn: nan) -> null; alpha null (krippendorff refuses);
    # macro-F1 over the four levels: F1_2 = 1, levels 0, 1, 3 used by neither side count 0
    ([(2, 2)] * 5, {"accuracy": 1.0, "cohen_kappa": None, "qwk": None, "krippendorff_alpha": None, "macro_f1": 0.25}),
    # a judge that always says 2 against varied qrels: kappa is defined and 0
    ([(0, 2), (1, 2), (2, 2), (3, 2)], {"accuracy": 0.25, "cohen_kappa": 0.0, "qwk": 0.0}),
    # a single pair, judged right: F1_3 = 1 and three empty levels at 0
    ([(3, 3)], {"accuracy": 1.0, "cohen_kappa": None, "macro_f1": 0.25}),
    # perfect agreement over all levels
    (
        [(0, 0), (1, 1), (2, 2), (3, 3)],
        {"cohen_kappa": 1.0, "qwk": 1.0, "krippendorff_alpha": 1.0, "kappa_bin_012_3": 1.0},
    ),
    # no 3 on either side: the 012|3 cut has one class on both sides -> null; macro-F1 (1 + 0 + 0 + 0) / 4,
    # not the (1 + 0 + 0) / 3 of scikit-learn's default labels=None
    ([(0, 0), (1, 2), (2, 1)], {"kappa_bin_012_3": None, "macro_f1": 0.25}),
    # the judge reverses the scale
    ([(0, 3), (1, 2), (2, 1), (3, 0)], {"accuracy": 0.0, "macro_f1": 0.0}),
]


@pytest.mark.parametrize(("pairs", "expected"), DEGENERATE)
def test_degenerate_groups_give_defined_values_or_null(con, pairs, expected):
    groups = [[(relevance, lab, 50.0) for relevance, lab in pairs]]
    check_agreement(con, groups)
    row = view(con, "metrics_agreement").row(0, named=True)
    for column, value in expected.items():
        assert_close(row[column], value, column)


def test_group_whose_labels_all_failed_is_reported_not_scored(con):
    clear_judgments(con)
    load_judgments(con, judgments_of([[(1, None, 70.0), (2, None, None)], [(1, 1, 70.0)]]))
    rows = rows_by_key(view(con, "metrics_agreement"))
    failed = rows[group_key(0)]
    assert (failed["n_judgments"], failed["n_label_failures"], failed["n_scored"]) == (2, 2, 0)
    assert all(failed[column] is None for column in AGREEMENT_COLUMNS)
    assert rows[group_key(1)]["accuracy"] == 1.0
    cells = view(con, "metrics_confusion").filter(personality="default")
    assert cells["n_judgments"].sum() == 0 and cells.height == 16


def test_macro_f1_is_sklearns_over_all_four_levels_with_zero_division_0(con):
    # level 1 in neither relevance nor label: F1_0 = 2*1/(2+1), F1_2 = 2*1/(1+2), F1_3 = 1, F1_1 = 0
    pairs = [(0, 0), (0, 2), (2, 2), (3, 3)]
    clear_judgments(con)
    load_judgments(con, judgments_of([[(relevance, lab, None) for relevance, lab in pairs]]))
    row = view(con, "metrics_agreement").row(0, named=True)
    truth, label = [r for r, _ in pairs], [lab for _, lab in pairs]
    expected = f1_score(truth, label, labels=[0, 1, 2, 3], average="macro", zero_division=0)
    assert expected == pytest.approx((2 / 3 + 0 + 2 / 3 + 1) / 4, abs=1e-15)
    assert math.isclose(row["macro_f1"], expected, rel_tol=1e-12)
    assert not math.isclose(row["macro_f1"], f1_score(truth, label, average="macro"))  # labels=None: / 3


def test_qwk_weighs_by_level_values_not_by_position(con):
    # levels 0, 2, 3 only: scikit-learn without labels= would weigh 0->2 as one step; the view weighs it 4
    clear_judgments(con)
    load_judgments(con, judgments_of([[(0, 2, None), (2, 0, None), (3, 3, None), (0, 0, None)]]))
    row = view(con, "metrics_agreement").row(0, named=True)
    # N = 4; disagreement sum (i-j)^2 n_ij = 4 + 4 = 8; both marginals are (2, 0, 1, 1) over levels 0..3, so
    # the chance term sum (i-j)^2 row_i col_j = 2 * (2*1*4 + 2*1*9 + 1*1*1) = 54: qwk = 1 - 4 * 8 / 54
    assert math.isclose(row["qwk"], 1 - 4 * 8 / 54, rel_tol=1e-12)
