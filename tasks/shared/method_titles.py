"""What Table 5 calls Experiment 2's methods: the learners (tasks/classify/learners.py) and the votes.

Kept apart from the learners so that the report names them without importing scikit-learn, XGBoost and LightGBM,
and without importing the classify stage.
"""

from __future__ import annotations

from tasks.shared.aggregate import VOTE_NAMES

LEARNER_TITLES = {
    "rf": "Random Forest",
    "xgboost": "XGBoost",
    "lightgbm": "LightGBM",
    "ordinal_logit": "Ordinal LR",
    "rf_no_conf": "RF w/o conf.",
}
TITLES = LEARNER_TITLES | VOTE_NAMES
