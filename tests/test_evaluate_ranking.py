"""Issue 21: the rank correlations between two rankings of systems (Kendall's tau vs scipy, tau-AP by hand)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy import stats

from tasks.evaluate.ranking import agreement, compare_rankings, tau_ap

pytestmark = pytest.mark.core


@pytest.mark.parametrize(
    ("estimate", "expected"),
    [
        # reference A > B > C > D as scores 4, 3, 2, 1; estimate as scores for A, B, C, D
        ([4, 3, 2, 1], 1.0),  # the same order
        ([1, 2, 3, 4], -1.0),  # reversed
        # B A C D: i=2 (A) has B above, not above A in the reference: 0/1; C: 2/2; D: 3/3 -> 2/3 * 2 - 1
        ([3, 4, 2, 1], 1 / 3),
        # A B D C: B: 1/1; D: 2/2; C: A, B of A, B, D above it in the reference: 2/3 -> 2/3 * (8/3) - 1
        ([4, 3, 1, 2], 7 / 9),
        # C A B D: A: 0/1; B: A above it (1 of C, A): 1/2; D: 3/3 -> 2/3 * 1.5 - 1
        ([3, 2, 4, 1], 0.0),
    ],
)
def test_tau_ap_matches_hand_computed_cases(estimate, expected):
    assert tau_ap([4, 3, 2, 1], estimate) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(
    ("reference", "estimate", "expected"),
    [
        # the same tie in both: full agreement, as Kendall's tau-b says
        ([3, 2, 2, 1], [3, 2, 2, 1], 1.0),
        # B, C tied in the reference only, estimate A B C D: B: 1/1; C: A 1, B half: 1.5/2; D: 3/3 -> 2/3 * 2.75 - 1
        ([3, 2, 2, 1], [4, 3, 2, 1], 5 / 6),
        # B, C tied in the estimate only (taken as given, B first): B: 1/1; C: A 1, B half: 1.5/2; D: 3/3
        ([4, 3, 2, 1], [3, 2, 2, 1], 5 / 6),
    ],
)
def test_tau_ap_ties(reference, estimate, expected):
    assert tau_ap(reference, estimate) == pytest.approx(expected, abs=1e-12)


def test_tau_ap_weighs_top_swaps_more_than_kendall_does():
    # One swap at the top and one at the bottom: Kendall's tau is 2/3 for both, tau-AP is not.
    kendall_top = stats.kendalltau([4, 3, 2, 1], [3, 4, 2, 1]).statistic
    kendall_bottom = stats.kendalltau([4, 3, 2, 1], [4, 3, 1, 2]).statistic
    assert kendall_top == pytest.approx(kendall_bottom) == pytest.approx(2 / 3)
    assert tau_ap([4, 3, 2, 1], [3, 4, 2, 1]) < tau_ap([4, 3, 2, 1], [4, 3, 1, 2])


def test_tau_ap_on_ircor_example_equals_urbano_pairwise_form():
    # Urbano & Marrero's (ircor) example; their pairwise form: sum over concordant pairs of 1 / (lower rank in y - 1).
    x = [0.67, 0.45, 0.29, 0.12, 0.57, 0.24, 0.94, 0.75, 0.08, 0.54]
    y = [0.48, 0.68, 0.32, 0.09, 0.06, 0.61, 0.87, 0.22, 0.44, 0.84]
    assert tau_ap(x, y) == pytest.approx(11 / 28, abs=1e-12)


def test_kendall_and_spearman_equal_scipy():
    rng = np.random.default_rng(7)
    for _ in range(20):
        reference, estimate = rng.normal(size=12), rng.normal(size=12)
        tau, rho, _ = agreement(list(reference), list(estimate))
        assert tau == stats.kendalltau(reference, estimate).statistic
        assert rho == stats.spearmanr(reference, estimate).statistic


def test_constant_rankings_have_no_correlation():
    assert agreement([0.5, 0.5, 0.5], [0.1, 0.2, 0.3]) == (None, None, None)
    assert agreement([0.5], [0.1]) == (None, None, None)


def test_compare_rankings_overall_and_per_topic():
    rows = [
        # qrels_name, system, measure, query_id, value
        ("human", "s1", "nDCG@10", "all", 0.9), ("human", "s2", "nDCG@10", "all", 0.5),
        ("human", "s3", "nDCG@10", "all", 0.1),
        ("HA", "s1", "nDCG@10", "all", 0.2), ("HA", "s2", "nDCG@10", "all", 0.6), ("HA", "s3", "nDCG@10", "all", 0.7),
        ("human", "s1", "nDCG@10", "q1", 0.3), ("human", "s2", "nDCG@10", "q1", 0.2),
        ("HA", "s1", "nDCG@10", "q1", 0.9), ("HA", "s2", "nDCG@10", "q1", 0.1),
    ]  # fmt: skip
    scores = pl.DataFrame(rows, schema=["qrels_name", "system", "measure", "query_id", "value"], orient="row")
    result = compare_rankings(scores).to_dicts()
    assert result[1].pop("spearman_rho") == pytest.approx(1.0)  # scipy gives 0.9999999999999999 for two systems
    assert result == [
        {"qrels_name": "HA", "measure": "nDCG@10", "query_id": "all", "n_systems": 3, "kendall_tau": -1.0,
         "spearman_rho": -1.0, "tau_ap": -1.0},
        {"qrels_name": "HA", "measure": "nDCG@10", "query_id": "q1", "n_systems": 2, "kendall_tau": 1.0,
         "tau_ap": 1.0},
    ]  # fmt: skip
