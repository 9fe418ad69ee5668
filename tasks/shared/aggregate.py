"""Unsupervised aggregation of several judges' labels into one label per pair (no qrels used): the overconfidence
study's four voting baselines, used by classify (Table 5's votes) and fuse (the baselines beside the fuser).

labels: (n, m) ints in 0..3, one column per judge; confidences: (n, m) in 0..100. Every vote sums a weight per
label and the label with the largest sum wins:
- vote_majority: weight 1 (the most frequent label);
- vote_confidence: weight c (the judge's confidence);
- vote_sqrt_confidence: weight sqrt(c);
- vote_entropy: weight c / (H + 0.001), the confidence weighted by the inverse of the judge's entropy H (nats)
  over the four labels. The warehouse keeps one confidence per judgment, never the label distribution behind it
  (logprob and sampling store only the chosen label's probability), so H is always taken from the confidence:
  p = c/100 on the judge's label and (1 - c/100)/3 on each other label, H = -sum p ln p. 0.001 keeps a fully
  sure judge (H = 0) finite: it outweighs any unsure one (c = 99 weighs 99/0.068 = 1,462; c = 100 weighs 100,000).
majority_vote_summed is a variant that is not the study's (ties to the summed confidence), kept under its own name.
Ties (the study): the tied label whose most confident voter is the most confident wins (the maximum confidence,
not the sum); still tied, or without confidences, the lower label. Two sums are tied when they differ by at most
TIE_RTOL of the larger (float sums of equal weights in another order differ in the last bits: 1.1 + 2.2 is
3.3000000000000003, not 3.3, and must tie with a lone 3.3).
Each vote also says how sure it is: the winning label's share of the summed weight x 100 (0-100, like a judge's
confidence), null when no judge carried any weight.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

N_LEVELS = 4
TIE_RTOL = 1e-9  # sums this close (relative) are tied: rounding, never a real difference of confidences 0-100
ENTROPY_EPSILON = 0.001  # added to H (nats) before inverting: a judge with c = 100 stays finite
VOTE_NAMES = {
    "vote_majority": "Majority vote",
    "vote_confidence": "Conf.-weighted vote",
    "vote_sqrt_confidence": "Sqrt-conf.-weighted vote",
    "vote_entropy": "Entropy-weighted vote",
}


@dataclass(frozen=True)
class Vote:
    """A vote's label per pair and its confidence (the winner's share of the weight x 100; NaN: no weight)."""

    label: np.ndarray
    confidence: np.ndarray


def vote_counts(labels: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Summed weight behind each level, shape (n, 4)."""
    return np.stack([np.where(labels == k, weights, 0.0).sum(axis=1) for k in range(N_LEVELS)], axis=1)


def top_confidence(labels: np.ndarray, confidences: np.ndarray | None) -> np.ndarray:
    """The highest confidence among each level's voters, shape (n, 4); -1 where a level has no voter."""
    if confidences is None:
        return np.where(vote_counts(labels, np.ones(labels.shape)) > 0, 0.0, -1.0)
    return np.stack([np.where(labels == k, confidences, -1.0).max(axis=1) for k in range(N_LEVELS)], axis=1)


def decide(labels: np.ndarray, weights: np.ndarray, confidences: np.ndarray | None) -> Vote:
    """The level with the largest summed weight; ties to the highest single confidence, then the lower level."""
    support = vote_counts(labels, weights)
    best = support.max(axis=1, keepdims=True)
    tied = support >= best - TIE_RTOL * np.abs(best)
    # argmax returns the first maximum: the lower level among those tied on both keys
    winner = np.argmax(np.where(tied, top_confidence(labels, confidences), -2.0), axis=1)
    total = support.sum(axis=1)
    won = support[np.arange(len(winner)), winner]
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(total > 0, 100.0 * (won / total), np.nan)  # won / total first: never above 100
    return Vote(winner, share)


def majority_baseline(labels: np.ndarray, confidences: np.ndarray | None = None) -> Vote:
    """Most frequent label; ties to the label with the single most confident voter, then the lower label."""
    return decide(labels, np.ones(labels.shape), confidences)


def majority_vote(labels: np.ndarray, confidences: np.ndarray | None = None) -> np.ndarray:
    """The majority baseline's labels alone."""
    return majority_baseline(labels, confidences).label


def majority_vote_summed(labels: np.ndarray, confidences: np.ndarray) -> np.ndarray:
    """A variant, not the study's: ties to the highest summed confidence of the tied labels, then the lower label
    (what classify's majority vote did before the study's rule; kept for comparison)."""
    counts = vote_counts(labels, np.ones(labels.shape))
    # counts are integers and summed confidences < 100 m + 1: the key orders by count, then summed confidence
    return np.argmax(counts * (100.0 * labels.shape[1] + 1.0) + vote_counts(labels, confidences), axis=1)


def confidence_baseline(labels: np.ndarray, confidences: np.ndarray) -> Vote:
    """Sum of confidences per label."""
    return decide(labels, confidences, confidences)


def sqrt_confidence_baseline(labels: np.ndarray, confidences: np.ndarray) -> Vote:
    """Sum of square-rooted confidences per label."""
    return decide(labels, np.sqrt(confidences), confidences)


def judge_entropy(confidences: np.ndarray) -> np.ndarray:
    """H (nats) of c/100 on the judge's label and (1 - c/100)/3 on each of the three others."""
    p = confidences / 100.0
    rest = (1.0 - p) / (N_LEVELS - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        own = np.where(p > 0, -p * np.log(p), 0.0)
        others = np.where(rest > 0, -(N_LEVELS - 1) * rest * np.log(rest), 0.0)
    return own + others


def entropy_baseline(labels: np.ndarray, confidences: np.ndarray) -> Vote:
    """Sum per label of confidences weighted by the inverse of their judge's entropy."""
    return decide(labels, confidences / (judge_entropy(confidences) + ENTROPY_EPSILON), confidences)


VOTES: dict[str, Callable[[np.ndarray, np.ndarray], Vote]] = {
    "vote_majority": majority_baseline,
    "vote_confidence": confidence_baseline,
    "vote_sqrt_confidence": sqrt_confidence_baseline,
    "vote_entropy": entropy_baseline,
}


def baseline_votes(labels: np.ndarray, confidences: np.ndarray | None) -> dict[str, Vote]:
    """Every baseline's labels and confidences; only the majority vote when the judges give no confidences."""
    if confidences is None:
        return {"vote_majority": majority_baseline(labels)}
    return {name: vote(labels, confidences) for name, vote in VOTES.items()}


def aggregate_votes(labels: np.ndarray, confidences: np.ndarray | None) -> dict[str, np.ndarray]:
    """Every baseline's label for every pair (what classify scores)."""
    return {name: vote.label for name, vote in baseline_votes(labels, confidences).items()}
