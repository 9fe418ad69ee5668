"""Unsupervised aggregation of several judges' labels into one label per pair (no qrels used).

labels: (n, m) ints in 0..3, one column per judge; confidences: (n, m) in 0..100.
- majority: most frequent label; ties go to the tied label whose voters' confidences sum highest,
  then to the lower label (without confidences: straight to the lower label).
- confidence: each vote weighs its confidence; sqrt_confidence: its square root.
- entropy: each vote weighs 1 - H(p)/log(4), where p puts the judge's confidence c/100 on its label
  and spreads 1 - c/100 evenly over the other three levels; confidences below 25 (chance) count
  as 25, i.e. weight 0, so a vote never gains weight by being less sure than chance.
Weighted votes break exact ties to the lower label.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

N_LEVELS = 4
VOTE_NAMES = {
    "vote_majority": "Majority vote",
    "vote_confidence": "Conf.-weighted vote",
    "vote_sqrt_confidence": "Sqrt-conf.-weighted vote",
    "vote_entropy": "Entropy-weighted vote",
}


def vote_counts(labels: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Summed weight behind each level, shape (n, 4)."""
    return np.stack([np.where(labels == k, weights, 0.0).sum(axis=1) for k in range(N_LEVELS)], axis=1)


def majority_vote(labels: np.ndarray, confidences: np.ndarray | None = None) -> np.ndarray:
    """Most frequent label; ties to the highest summed confidence, then to the lower label."""
    counts = vote_counts(labels, np.ones(labels.shape))
    if confidences is None:
        return np.argmax(counts, axis=1)
    support = vote_counts(labels, confidences)
    # Counts are integers and support < 100 * m + 1, so this key orders by count, then support.
    key = counts * (100.0 * labels.shape[1] + 1.0) + support
    return np.argmax(key, axis=1)


def weighted_vote(labels: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Level with the largest summed weight; exact ties to the lower level."""
    return np.argmax(vote_counts(labels, weights), axis=1)


def entropy_weights(confidences: np.ndarray) -> np.ndarray:
    """1 - normalised entropy of the distribution a judgment's confidence implies."""
    p = np.clip(confidences / 100.0, 1.0 / N_LEVELS, 1.0)
    rest = (1.0 - p) / (N_LEVELS - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = -(p * np.log(p)) - (N_LEVELS - 1) * np.where(rest > 0, rest * np.log(rest), 0.0)
    return 1.0 - h / np.log(N_LEVELS)


VOTES: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "vote_majority": majority_vote,
    "vote_confidence": lambda lab, conf: weighted_vote(lab, conf),
    "vote_sqrt_confidence": lambda lab, conf: weighted_vote(lab, np.sqrt(conf)),
    "vote_entropy": lambda lab, conf: weighted_vote(lab, entropy_weights(conf)),
}


def aggregate_votes(labels: np.ndarray, confidences: np.ndarray | None) -> dict[str, np.ndarray]:
    """Every vote's prediction for every pair; only the majority vote when there are no confidences."""
    if confidences is None:
        return {"vote_majority": majority_vote(labels)}
    return {name: vote(labels, confidences) for name, vote in VOTES.items()}
