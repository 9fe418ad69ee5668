"""What every metric is called where a reader sees it: tables, figures, artifacts, the terminal.

The keys are the metric views' column names (sql/metrics); the classifier's summary (clf_summary) names three of
them by shorter column stems, mapped here so that both print the same titles.
"""

from __future__ import annotations

import math
from typing import Any

METRIC_TITLES = {
    "accuracy": "Accuracy",
    "cohen_kappa": "Kappa",
    "qwk": "QWK",
    "macro_f1": "Macro-F1",
    "kappa_bin_0_123": "Kappa 0|123",
    "kappa_bin_01_23": "Kappa 01|23",
    "kappa_bin_012_3": "Kappa 012|3",
    "krippendorff_alpha": "Krippendorff's alpha",
    "ro": "RO",
    "ru": "RU",
    "hmr": "HMR",
    "ece": "ECE",
    "ace": "ACE",
    "mce": "MCE",
    "brier": "Brier",
    "nll": "NLL",
    "th_score": "TH-Score",
    "accuracy_confident": "Accuracy (confident)",
    "coverage_confident": "Coverage (confident)",
    "accuracy_unconfident": "Accuracy (unconfident)",
    "coverage_unconfident": "Coverage (unconfident)",
    "requests_per_judgment": "Requests / judgment",
    "prompt_tokens_per_judgment": "Prompt tokens / judgment",
    "completion_tokens_per_judgment": "Completion tokens / judgment",
}

# clf_summary's column stems (kappa_mean, qwk_sd, f1_mean, ...) -> the metric they hold
CLASSIFIER_METRICS = {"kappa": "cohen_kappa", "qwk": "qwk", "f1": "macro_f1"}
CLASSIFIER_METRIC_TITLES = {stem: METRIC_TITLES[name] for stem, name in CLASSIFIER_METRICS.items()}


def metric_title(name: str) -> str:
    """A metric's title; a name without one (a user's own column) prints as it is."""
    return METRIC_TITLES.get(name, name)


def format_value(value: Any) -> str:
    """Numbers to 4 decimals, null as an empty cell."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float):
        return f"{value:.4f}"
    return str(value)
