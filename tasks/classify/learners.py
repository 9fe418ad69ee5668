"""The supervised learners of Experiment 2 and one fit-and-predict, importable without Prefect.

Kept apart from tasks/classify/tasks.py so that the worker processes that fit them start quickly: they import
this module (scikit-learn, XGBoost, LightGBM, the ordinal model) and nothing of the pipeline.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from lightgbm import LGBMClassifier
from sklearn.ensemble import RandomForestClassifier
from xgboost import XGBClassifier

from tasks.classify.ordinal import OrdinalLogit
from tasks.shared.method_titles import LEARNER_TITLES


@dataclass(frozen=True)
class Learner:
    """A supervised learner: table name, whether it sees confidences, and how to build it."""

    name: str
    with_confidence: bool
    make: Callable[[int], Any]

    @property
    def title(self) -> str:
        """What Table 5 calls it (tasks/shared/method_titles.py)."""
        return LEARNER_TITLES[self.name]


LEARNERS = {
    learner.name: learner
    for learner in (
        Learner("rf", True, lambda seed: _forest(seed)),
        Learner(
            "xgboost",
            True,
            lambda seed: XGBClassifier(
                n_estimators=200,
                max_depth=5,
                learning_rate=0.05,
                subsample=0.81,
                tree_method="hist",
                n_jobs=1,
                random_state=seed,
                verbosity=0,
            ),
        ),
        # LightGBM ignores subsample unless bagging runs every subsample_freq iterations.
        Learner(
            "lightgbm",
            True,
            lambda seed: LGBMClassifier(
                n_estimators=200,
                max_depth=5,
                learning_rate=0.05,
                subsample=0.81,
                subsample_freq=1,
                n_jobs=1,
                random_state=seed,
                deterministic=True,
                force_row_wise=True,
                verbose=-1,
            ),
        ),
        Learner("ordinal_logit", True, lambda seed: OrdinalLogit()),
        Learner("rf_no_conf", False, lambda seed: _forest(seed)),
    )
}


def _forest(seed: int) -> RandomForestClassifier:
    return RandomForestClassifier(
        n_estimators=200, max_depth=6, bootstrap=True, max_samples=0.81, n_jobs=1, random_state=seed
    )


def fit_predict(name: str, seed: int, train: np.ndarray, test: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Fit learner `name` (seeded) on the training rows and predict the test rows' levels."""
    learner = LEARNERS[name]
    with warnings.catch_warnings():
        # A 10% split of a small collection (4 pairs of the 40-pair sample) leaves a forest's 81% bootstrap
        # 3 rows: that is the study's design, not a fault; said once per worker task it flooded the terminal.
        warnings.filterwarnings("ignore", message="Using the fractional value max_samples", category=UserWarning)
        model = learner.make(seed).fit(x[train], y[train])
    return np.asarray(model.predict(x[test])).astype(np.int64).ravel()
