"""Prediction-powered inference for means (PPI++, power-tuned) and the label calibration of its adapted variant.

`ppi_mean_ci` is ppi-python's `ppi_mean_ci` (Angelopoulos, Duchi, Zrnic 2023, "PPI++"; package 0.2.3) for many
means at once: one column per mean, each with its own power-tuning lambda (what ppi-python gives when called on
each column alone), a normal-approximation interval. tests/test_evaluate_intervals.py checks it equal to the package
to 1e-9. The package itself is a test dependency only: it pulls numba, llvmlite and gdown for this closed form.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats


@dataclass(frozen=True)
class MeanInterval:
    """Per column: the estimate, the interval's bounds, its standard error and the lambda used."""

    estimate: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    se: np.ndarray
    lam: np.ndarray


def rectified_mean(y: np.ndarray, yhat: np.ndarray, yhat_all: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """The PPI point estimate per column: lam x mean of the predictions over all + mean of (y - lam x yhat)."""
    return lam * yhat_all.mean(axis=0) + (y - lam * yhat).mean(axis=0)


def tuned_lambda(y: np.ndarray, yhat: np.ndarray, yhat_all: np.ndarray) -> np.ndarray:
    """PPI++'s power-tuning lambda per column, clipped to [0, 1], as ppi-python's `_calc_lam_glm` for a mean.

    lambda = Cov(Y, Yhat) / ((1 + n/N) Var(Yhat)), the covariance over the labelled rows (ddof 0) and the variance
    over labelled and unlabelled rows together (ddof 1). Predictions that do not vary carry nothing: lambda 0
    (ppi-python would divide by zero there).
    """
    n, big_n = y.shape[0], yhat_all.shape[0]
    cov = ((y - y.mean(axis=0)) * (yhat - yhat.mean(axis=0))).mean(axis=0)
    var = np.concatenate([yhat, yhat_all]).var(axis=0, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = np.where(var > 0, cov / ((1 + n / big_n) * var), 0.0)
    return np.clip(lam, 0.0, 1.0)


def ppi_mean_ci(
    y: np.ndarray, yhat: np.ndarray, yhat_all: np.ndarray, alpha: float, lam: float | np.ndarray | None = None
) -> MeanInterval:
    """PPI++ intervals for the mean of each column of Y over a population (n labelled rows, N rows predicted).

    y, yhat: (n, m), the true values and predictions on the labelled rows; yhat_all: (N, m), the predictions on the
    population. `lam` None tunes lambda per column (PPI++); 1 is plain PPI; 0 with zero predictions is the
    classical interval from the labelled rows alone; an array gives each column its own.
    """
    n, big_n = y.shape[0], yhat_all.shape[0]
    lams = tuned_lambda(y, yhat, yhat_all) if lam is None else np.broadcast_to(np.asarray(lam, float), y.shape[1])
    estimate = rectified_mean(y, yhat, yhat_all, lams)
    imputed = (lams * yhat_all).std(axis=0) / np.sqrt(big_n)
    rectifier = (y - lams * yhat).std(axis=0) / np.sqrt(n)
    se = np.sqrt(imputed**2 + rectifier**2)
    z = stats.norm.ppf(1 - alpha / 2)
    return MeanInterval(estimate, estimate - z * se, estimate + z * se, se, lams)


# Confidence bins of the adapted calibration: [0, 50), [50, 70), [70, 90), [90, 100]; a pair without one: its own bin.
CONFIDENCE_EDGES = (50.0, 70.0, 90.0)


def confidence_bins(confidence: np.ndarray) -> np.ndarray:
    """The calibration bin of each confidence (0-100); NaN (no confidence) gets the last bin."""
    bins = np.searchsorted(np.asarray(CONFIDENCE_EDGES), confidence, side="right")
    return np.where(np.isnan(confidence), len(CONFIDENCE_EDGES) + 1, bins)


def calibrated_probabilities(
    cell_label: np.ndarray, cell_bin: np.ndarray, sample: np.ndarray, human: np.ndarray, n_grades: int
) -> tuple[np.ndarray, np.ndarray]:
    """P(human grade | LLM label, confidence bin) per pair, fitted on the human sample, smoothed hierarchically.

    cell_label, cell_bin: per pool pair (grade index, bin); sample: the sampled pairs' pool positions; human: their
    human grade index. P0(g) = (n_g + 1) / (n + G); P1(g | l) = (n_lg + P0(g)) / (n_l + 1);
    P2(g | l, b) = (n_lbg + P1(g | l)) / (n_lb + 1). Returns (probabilities for every pool pair, shape (N, G);
    probabilities for the sampled pairs fitted without the pair itself (leave-one-out), shape (n, G)), so a sampled
    pair's prediction never saw its own human label.
    """
    n_bins = int(cell_bin.max()) + 1
    own = np.eye(n_grades)[human]  # (n, G)
    lab, cell = cell_label[sample], cell_label[sample] * n_bins + cell_bin[sample]
    marginal = own.sum(axis=0)
    by_label = np.zeros((n_grades, n_grades))
    np.add.at(by_label, lab, own)
    by_cell = np.zeros((n_grades * n_bins, n_grades))
    np.add.at(by_cell, cell, own)

    def smooth(m: np.ndarray, lg: np.ndarray, cg: np.ndarray) -> np.ndarray:
        p0 = (m + 1) / (m.sum(axis=-1, keepdims=True) + n_grades)
        p1 = (lg + p0) / (lg.sum(axis=-1, keepdims=True) + 1)
        return (cg + p1) / (cg.sum(axis=-1, keepdims=True) + 1)

    all_cells = cell_label * n_bins + cell_bin
    everyone = smooth(marginal[None, :], by_label[cell_label], by_cell[all_cells])
    left_out = smooth(marginal[None, :] - own, by_label[lab] - own, by_cell[cell] - own)
    return everyone, left_out
