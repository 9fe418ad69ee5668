"""The study's four voting baselines (tasks/shared/aggregate.py) on hand-computed cases, ties included."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tasks.shared.aggregate import (
    aggregate_votes,
    baseline_votes,
    confidence_baseline,
    entropy_baseline,
    judge_entropy,
    majority_baseline,
    majority_vote,
    majority_vote_summed,
    sqrt_confidence_baseline,
)

pytestmark = pytest.mark.core


def one(vote, labels, confidences):
    got = vote(np.array([labels]), None if confidences is None else np.array([confidences], dtype=float))
    return int(got.label[0]), float(got.confidence[0])


@pytest.mark.parametrize(
    ("labels", "confidences", "expected"),
    [
        # clear majority: 2 of 3 votes
        ([1, 1, 2], [10, 10, 90], (1, 200 / 3)),
        # 1-1 tie: the label whose voter is more confident
        ([0, 3], [40, 60], (3, 50.0)),
        # 2-2 tie where the highest confidence (90 for level 0) and the summed one (120 for level 2) disagree:
        # the study's rule takes the maximum
        ([0, 0, 2, 2], [90, 10, 60, 60], (0, 50.0)),
        # tied in count and in the highest confidence: the lower label
        ([1, 2], [50, 50], (1, 50.0)),
        # no confidences: ties to the lower label
        ([3, 1], None, (1, 50.0)),
    ],
)
def test_majority_baseline(labels, confidences, expected):
    assert one(majority_baseline, labels, confidences) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("labels", "confidences", "expected"),
    [
        # 100 against 30 + 30
        ([0, 0, 3], [30, 30, 100], (3, 100 * 100 / 160)),
        # 50 + 50 = 100 ties 100: level 3's single voter is the most confident
        ([0, 0, 3], [50, 50, 100], (3, 50.0)),
        # nobody carries weight: tied everywhere, the lower label, no confidence
        ([1, 2], [0, 0], (1, math.nan)),
        # 1.1 + 2.2 ties 3.3 (in floats 3.3000000000000003 > 3.3): the tie goes to level 1's more confident voter
        ([0, 0, 1], [1.1, 2.2, 3.3], (1, 50.0)),
        # a real difference, however small, is no tie
        ([0, 0, 1], [1.1, 2.2, 3.2999], (0, 100 * 3.3 / 6.5999)),
    ],
)
def test_confidence_baseline(labels, confidences, expected):
    assert one(confidence_baseline, labels, confidences) == pytest.approx(expected, nan_ok=True)


@pytest.mark.parametrize(
    ("labels", "confidences", "expected"),
    [
        # 2 sqrt(30) = 10.954 > sqrt(100) = 10
        ([0, 0, 3], [30, 30, 100], (0, 100 * 2 * math.sqrt(30) / (2 * math.sqrt(30) + 10))),
        # sqrt(25) + sqrt(25) = 10 ties sqrt(100): the maximum confidence (100) breaks it
        ([0, 0, 1], [25, 25, 100], (1, 50.0)),
        # sqrt(2) + sqrt(8) = sqrt(18) (in floats 4.242640687119286 > 4.242640687119285): level 1's 18 breaks it
        ([0, 0, 1], [2, 8, 18], (1, 50.0)),
    ],
)
def test_sqrt_confidence_baseline(labels, confidences, expected):
    assert one(sqrt_confidence_baseline, labels, confidences) == pytest.approx(expected)


def entropy(c: float) -> float:
    """H in nats of c/100 on one label and the rest spread over three."""
    p, rest = c / 100, (1 - c / 100) / 3
    return -(p * math.log(p) if p else 0.0) - 3 * (rest * math.log(rest) if rest else 0.0)


def test_judge_entropy():
    got = judge_entropy(np.array([100.0, 50.0, 25.0, 0.0]))
    # certain: 0; 50: ln 2 / 2 + ln 6 / 2; 25: uniform, ln 4; 0: uniform over the other three, ln 3
    assert got == pytest.approx([0.0, (math.log(2) + math.log(6)) / 2, math.log(4), math.log(3)], abs=1e-12)


def test_entropy_baseline_weighs_confidence_by_inverse_entropy():
    w50, w90 = 50 / (entropy(50) + 0.001), 90 / (entropy(90) + 0.001)  # 40.21 and 206.45
    assert one(entropy_baseline, [0, 0, 2], [50, 50, 90]) == pytest.approx((2, 100 * w90 / (2 * w50 + w90)))
    # while the majority vote says 0
    assert one(majority_baseline, [0, 0, 2], [50, 50, 90])[0] == 0
    # a fully sure judge (H = 0) weighs 100 / 0.001 and outvotes ten judges at 99
    assert one(entropy_baseline, [1] * 10 + [3], [99] * 10 + [100])[0] == 3
    # equal weights: tied in weight and in confidence, the lower label
    assert one(entropy_baseline, [2, 1], [70, 70]) == pytest.approx((1, 50.0))


def test_votes_run_row_by_row():
    labels = np.array([[0, 0, 3], [2, 2, 1]])
    conf = np.array([[30.0, 30.0, 100.0], [10.0, 10.0, 90.0]])
    got = baseline_votes(labels, conf)
    assert list(got) == ["vote_majority", "vote_confidence", "vote_sqrt_confidence", "vote_entropy"]
    assert got["vote_majority"].label.tolist() == [0, 2]
    assert got["vote_confidence"].label.tolist() == [3, 1]
    assert got["vote_confidence"].confidence == pytest.approx([62.5, 90 * 100 / 110])


def test_aggregate_votes_without_confidences_is_majority_only():
    assert list(aggregate_votes(np.array([[1, 1]]), None)) == ["vote_majority"]
    assert aggregate_votes(np.array([[1, 1]]), None)["vote_majority"].tolist() == [1]


def test_majority_vote_is_the_baselines_label_and_the_summed_variant_differs():
    labels, conf = np.array([[0, 0, 2, 2]]), np.array([[90.0, 10.0, 60.0, 60.0]])
    assert majority_vote(labels, conf).tolist() == [0]  # the study: the highest single confidence, 90
    assert majority_vote_summed(labels, conf).tolist() == [2]  # the variant: 120 summed against 100
    assert majority_vote_summed(np.array([[1, 2]]), np.array([[50.0, 50.0]])).tolist() == [1]


def test_a_unanimous_vote_is_100_exactly_under_every_weighting():
    # Found fusing the embedded model's judgments: one judge at confidence 60 gave the entropy vote
    # 100 * w / w = 100.00000000000001, which fuse_votes' check (0-100) refused.
    votes = baseline_votes(np.array([[3], [1]]), np.array([[60.0], [80.0]]))
    assert {name: vote.confidence.tolist() for name, vote in votes.items()} == {
        "vote_majority": [100.0, 100.0],
        "vote_confidence": [100.0, 100.0],
        "vote_sqrt_confidence": [100.0, 100.0],
        "vote_entropy": [100.0, 100.0],
    }
