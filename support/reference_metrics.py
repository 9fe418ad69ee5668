"""Independent reference metrics: what the metric views (sql/metrics/views/) are checked against, by the tests
(tests/test_metrics_*.py) and by the metrics benchmark (bench/bench_metrics.py).

The references are plain scikit-learn, `krippendorff` and NumPy over one group's arrays, written from the
definitions (not from the SQL): the SQL views are the product, these are what they are checked against.
"""

from __future__ import annotations

import math
import warnings

import krippendorff
import numpy as np
from sklearn.metrics import accuracy_score, cohen_kappa_score, confusion_matrix, f1_score


def _quiet(func, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return func(*args, **kwargs)


def _none_if_nan(value: float) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


# The columns of an agreement row (sql/metrics/views/agreement_from.sql), in order.
AGREEMENT_COLUMNS = [
    "accuracy",
    "cohen_kappa",
    "qwk",
    "macro_f1",
    "kappa_bin_0_123",
    "kappa_bin_01_23",
    "kappa_bin_012_3",
    "krippendorff_alpha",
]


def reference_agreement(truth: np.ndarray, label: np.ndarray) -> dict[str, float | None]:
    """scikit-learn / krippendorff agreement of one group's labelled pairs."""
    if len(truth) == 0:
        return dict.fromkeys(AGREEMENT_COLUMNS)
    out: dict[str, float | None] = {
        "accuracy": float(accuracy_score(truth, label)),
        "cohen_kappa": _none_if_nan(_quiet(cohen_kappa_score, truth, label)),
        # labels= fixes the weights on the values 0..3 (sklearn weighs by index in the labels present)
        "qwk": _none_if_nan(_quiet(cohen_kappa_score, truth, label, labels=[0, 1, 2, 3], weights="quadratic")),
        # PERAS's one macro-F1: over the four levels, a level absent from both sides scoring 0
        "macro_f1": float(f1_score(truth, label, labels=[0, 1, 2, 3], average="macro", zero_division=0)),
    }
    for name, cut in (("kappa_bin_0_123", 1), ("kappa_bin_01_23", 2), ("kappa_bin_012_3", 3)):
        out[name] = _none_if_nan(_quiet(cohen_kappa_score, truth >= cut, label >= cut))
    try:
        out["krippendorff_alpha"] = float(
            krippendorff.alpha(reliability_data=np.vstack([truth, label]).astype(float), level_of_measurement="ordinal")
        )
    except ValueError:  # one value in the domain: the package refuses, the view returns null
        out["krippendorff_alpha"] = None
    return out


def reference_confusion(truth: np.ndarray, label: np.ndarray) -> np.ndarray:
    """scikit-learn's 4x4 confusion matrix (rows: relevance, columns: label)."""
    if len(truth) == 0:
        return np.zeros((4, 4), dtype=int)
    return confusion_matrix(truth, label, labels=[0, 1, 2, 3])


def reference_reliability(correct: np.ndarray, p: np.ndarray) -> dict[str, float | None]:
    """Sakai's O, U, RO, RU, HMR in NumPy."""
    if len(p) == 0:
        return {"overconfidence": None, "underconfidence": None, "ro": None, "ru": None, "hmr": None}
    wrong = ~correct
    o = float(np.sum(p[wrong]))
    u = float(np.sum(1 - p[correct]))
    ro = 1 - o / wrong.sum() if wrong.any() else 1.0
    ru = 1 - u / correct.sum() if correct.any() else 1.0
    hmr = 2 * ro * ru / (ro + ru) if ro + ru > 0 else 0.0
    return {"overconfidence": o, "underconfidence": u, "ro": ro, "ru": ru, "hmr": hmr}


def _binned_error(correct: np.ndarray, p: np.ndarray, bins: np.ndarray) -> tuple[float, float]:
    """Weighted mean and max of |accuracy - mean p| over the non-empty bins."""
    total, worst = 0.0, 0.0
    for b in np.unique(bins):
        members = bins == b
        gap = abs(correct[members].mean() - p[members].mean())
        total += members.sum() / len(p) * gap
        worst = max(worst, gap)
    return total, worst


def reference_calibration(correct: np.ndarray, confidence: np.ndarray, eps: float = 0.1) -> dict[str, float | None]:
    """ECE, ACE, MCE, Brier, NLL and TH-Score in NumPy, from the definitions in docs/metrics.md."""
    keys = [
        "accuracy",
        "mean_p",
        "ece",
        "ace",
        "n_ace_bins",
        "mce",
        "brier",
        "nll",
        "th_score",
        "th_n_high",
        "th_acc_high",
        "th_share_high",
        "th_n_low",
        "th_acc_low",
        "th_share_low",
    ]
    n = len(confidence)
    if n == 0:
        return dict.fromkeys(keys)
    p = confidence / 100
    y = correct.astype(float)
    equal_width = np.minimum(np.floor(confidence / 10), 9)
    ece, mce = _binned_error(y, p, equal_width)
    # adaptive bins: rank = number of strictly smaller confidences, so ties share a bin
    below = np.searchsorted(np.sort(confidence), confidence, side="left")
    equal_mass = (10 * below) // n
    ace, _ = _binned_error(y, p, equal_mass)
    clipped = np.clip(p, 1e-6, 1 - 1e-6)
    high = confidence >= 100 - 100 * eps
    low = confidence <= 100 * eps
    acc_high = float(y[high].mean()) if high.any() else None
    acc_low = float(1 - y[low].mean()) if low.any() else None
    share_high, share_low = 100 * high.sum() / n, 100 * low.sum() / n

    def tail(acc: float | None, share: float) -> float:
        return 0.0 if acc is None else (math.exp(acc - 0.5) - 1) * share / 2

    return {
        "accuracy": float(y.mean()),
        "mean_p": float(p.mean()),
        "ece": ece,
        "ace": ace,
        "n_ace_bins": len(np.unique(equal_mass)),
        "mce": mce,
        "brier": float(np.mean((p - y) ** 2)),
        "nll": float(-np.mean(y * np.log(clipped) + (1 - y) * np.log(1 - clipped))),
        "th_score": tail(acc_high, share_high) + tail(acc_low, share_low),
        "th_n_high": int(high.sum()),
        "th_acc_high": acc_high,
        "th_share_high": float(share_high),
        "th_n_low": int(low.sum()),
        "th_acc_low": acc_low,
        "th_share_low": float(share_low),
    }


def reference_thresholds(correct: np.ndarray, confidence: np.ndarray, threshold: float = 80) -> dict[str, float | None]:
    """Accuracy and coverage at and above a confidence threshold, and below it."""
    if len(confidence) == 0:
        return dict.fromkeys(
            [
                "accuracy_all",
                "n_confident",
                "accuracy_confident",
                "coverage_confident",
                "n_unconfident",
                "accuracy_unconfident",
            ]
        )
    above = confidence >= threshold
    return {
        "accuracy_all": float(correct.mean()),
        "n_confident": int(above.sum()),
        "accuracy_confident": float(correct[above].mean()) if above.any() else None,
        "coverage_confident": float(above.mean()),
        "n_unconfident": int((~above).sum()),
        "accuracy_unconfident": float(correct[~above].mean()) if (~above).any() else None,
    }
