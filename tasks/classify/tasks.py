"""Experiment 2: repeated stratified splits, the learners, and their scores on each test part.

Every trial has its own seed, drawn from one base seed with numpy's SeedSequence; the seed drives
the split and the learner, so the same base seed gives the same numbers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from joblib import Parallel, delayed
from prefect import task
from prefect.cache_policies import NO_CACHE
from sklearn.metrics import cohen_kappa_score, f1_score
from sklearn.model_selection import train_test_split

from peras.errors import CheckFailed, UsageError
from peras.progress import track
from tasks.classify.learners import LEARNERS, fit_predict
from tasks.shared.aggregate import aggregate_votes
from tasks.shared.features import LEVELS, FeatureMatrix

# The machines have two cores: two worker processes, each fitting one trial at a time with one thread.
# Processes, not threads: on the small training parts of a 10% split, a forest's 200 trees are mostly
# scikit-learn's Python bookkeeping, and two threads contending for the GIL were slower than one
# (8.8 s vs 6.6 s for 50 forests of 4 pairs; 3.9 s in two processes). OpenMP threads inside
# XGBoost/LightGBM stay at one: their spin-waiting on busy cores made a run 10x slower.
N_JOBS = 2


@dataclass(frozen=True)
class Split:
    """One trial: its seed and the sorted row indices of its training and test parts."""

    trial: int
    seed: int
    train: np.ndarray
    test: np.ndarray


def trial_seeds(base_seed: int, trials: int) -> list[int]:
    """Independent 32-bit seeds; trial i's seed does not depend on how many trials are asked for."""
    return [int(s) for s in np.random.SeedSequence(base_seed).generate_state(trials, dtype=np.uint32)]


def score(truth: np.ndarray, predicted: np.ndarray) -> dict[str, float]:
    """Cohen's kappa, quadratic-weighted kappa and macro-F1 over the four levels."""
    return {
        "kappa": float(cohen_kappa_score(truth, predicted, labels=list(LEVELS))),
        "qwk": float(cohen_kappa_score(truth, predicted, labels=list(LEVELS), weights="quadratic")),
        "f1": float(f1_score(truth, predicted, labels=list(LEVELS), average="macro", zero_division=0)),
    }


@task(cache_policy=NO_CACHE)
def choose_learners(names: list[str] | None, matrix: FeatureMatrix) -> list[str]:
    """The learners to run: all by default; 'RF w/o conf.' only when there are confidences to leave out."""
    if names:
        unknown = [n for n in names if n not in LEARNERS]
        if unknown:
            raise UsageError(f"unknown learner {unknown[0]!r}: choose from {', '.join(LEARNERS)}")
        return list(dict.fromkeys(names))
    has_conf = bool(matrix.has_confidence.any())
    return [n for n, learner in LEARNERS.items() if has_conf or learner.with_confidence]


@task(cache_policy=NO_CACHE)
def draw_splits(relevance: np.ndarray, trials: int, base_seed: int, train_fraction: float) -> list[Split]:
    """Stratified train/test splits, one per trial; every training part must hold all four levels."""
    if trials < 1 or not 0 < train_fraction < 1:
        raise UsageError(f"need trials >= 1 and 0 < train fraction < 1 (got {trials}, {train_fraction})")
    counts = np.bincount(relevance, minlength=len(LEVELS))
    if (counts < 2).any():
        short = ", ".join(f"level {k}: {counts[k]} pairs" for k in LEVELS if counts[k] < 2)
        raise CheckFailed(f"a stratified split needs at least 2 pairs per relevance level ({short})")
    splits, problems = [], []
    for trial, seed in enumerate(trial_seeds(base_seed, trials), start=1):
        train, test = train_test_split(
            np.arange(len(relevance)), train_size=train_fraction, stratify=relevance, random_state=seed
        )
        absent = sorted(set(LEVELS) - set(relevance[train].tolist()))
        if absent:
            problems.append(f"trial {trial} (seed {seed}) lacks level {', '.join(map(str, absent))}")
        splits.append(Split(trial, seed, np.sort(train), np.sort(test)))
    if problems:
        more = f" and {len(problems) - 3} more" if len(problems) > 3 else ""
        raise CheckFailed(f"training parts without every relevance level: {'; '.join(problems[:3])}{more}")
    return splits


def _row(split: Split, learner: str, kind: str, truth: np.ndarray, predicted: np.ndarray) -> dict[str, Any]:
    return {
        "trial": split.trial,
        "seed": split.seed,
        "learner": learner,
        "learner_kind": kind,
        **score(truth, predicted),
        "n_train": len(split.train),
        "n_test": len(split.test),
    }


@task(cache_policy=NO_CACHE)
def evaluate_learner(name: str, matrix: FeatureMatrix, splits: list[Split]) -> list[dict[str, Any]]:
    """Fit one learner on each training part and score it on the test part."""
    learner = LEARNERS[name]
    x, y = matrix.features(learner.with_confidence), matrix.relevance
    jobs = (delayed(fit_predict)(name, split.seed, split.train, split.test, x, y) for split in splits)
    with track(f"classify {learner.title}", len(splits)) as bar:
        predictions = []
        for predicted in Parallel(n_jobs=N_JOBS, backend="loky", return_as="generator")(jobs):
            predictions.append(predicted)
            bar.advance()
    return [
        _row(split, name, "supervised", y[split.test], predicted)
        for split, predicted in zip(splits, predictions, strict=True)
    ]


@task(cache_policy=NO_CACHE)
def evaluate_votes(matrix: FeatureMatrix, splits: list[Split]) -> list[dict[str, Any]]:
    """Score the unsupervised votes on each test part (confidence votes only if every stream has one)."""
    confidences = matrix.confidences if matrix.has_confidence.all() else None
    predictions = aggregate_votes(matrix.labels, confidences)
    y = matrix.relevance
    return [
        _row(split, name, "vote", y[split.test], predicted[split.test])
        for name, predicted in predictions.items()
        for split in splits
    ]


@task(cache_policy=NO_CACHE)
def evaluate_single_streams(matrix: FeatureMatrix, splits: list[Split]) -> list[dict[str, Any]]:
    """Score each stream's own label on each test part; the best of these is the oracle."""
    y = matrix.relevance
    return [
        _row(split, f"single:{key}", "single", y[split.test], matrix.labels[split.test, j])
        for j, key in enumerate(matrix.keys)
        for split in splits
    ]
