"""Benchmark Experiment 2: 50 trials x every learner on 4,304 pairs x 22 features (synthetic).

The data imitate DL21's balanced subset: 4,304 pairs with a skewed qrel distribution, eleven
personalities of one model (errors mostly shared, each with its own bias), and confidences
that run higher when the label is right. Target: all learners in <= 60 s on two cores.

    .venv/bin/python bench/bench_classify.py            # writes bench/results/classify-<date>.json
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import finish, headline, machine, versions  # noqa: E402
from support.prefect_server import prefect_server  # noqa: E402
from tasks.classify.results import library_versions  # noqa: E402
from tasks.classify.tasks import LEARNERS, draw_splits, evaluate_learner, evaluate_single_streams, evaluate_votes  # noqa: E402
from tasks.shared.features import PERSONALITY_ORDER, FeatureMatrix  # noqa: E402

N_PAIRS, TRIALS, SEED, TARGET_S = 4304, 50, 42, 60.0
QREL_SHARES = (0.45, 0.25, 0.18, 0.12)


def synthetic_matrix(n_pairs: int = N_PAIRS, seed: int = 7) -> FeatureMatrix:
    """Eleven noisy, individually biased judges of a skewed four-level qrel."""
    rng = np.random.default_rng(seed)
    relevance = rng.choice(4, size=n_pairs, p=QREL_SHARES)
    m = len(PERSONALITY_ORDER)
    bias = rng.normal(0.0, 0.35, size=m)
    # One model behind every personality: most of the error is shared by all eleven.
    shared = rng.normal(0.0, 0.9, size=(n_pairs, 1))
    latent = relevance[:, None] + shared + bias[None, :] + rng.normal(0.0, 0.5, size=(n_pairs, m))
    labels = np.clip(np.rint(latent), 0, 3).astype(np.int64)
    right = labels == relevance[:, None]
    confidences = np.clip(np.rint(rng.normal(70 + 6 * right, 12)), 0, 100)
    return FeatureMatrix(
        keys=list(PERSONALITY_ORDER),
        has_confidence=np.ones(m, dtype=bool),
        labels=labels,
        confidences=confidences,
        relevance=relevance,
        n_excluded=0,
    )


def run() -> dict[str, Any]:
    """Time each learner (and the baselines) over the same 50 splits; return the result."""
    matrix = synthetic_matrix()
    splits = draw_splits(matrix.relevance, TRIALS, SEED, 0.1)
    seconds: dict[str, float] = {}
    kappa: dict[str, float] = {}
    for name in LEARNERS:
        start = time.perf_counter()
        rows = evaluate_learner(name, matrix, splits)
        seconds[name] = round(time.perf_counter() - start, 2)
        kappa[name] = round(float(np.mean([r["kappa"] for r in rows])), 4)
        print(f"{name:>15}: {seconds[name]:6.2f} s  mean kappa {kappa[name]:.4f}", flush=True)
    start = time.perf_counter()
    evaluate_votes(matrix, splits)
    evaluate_single_streams(matrix, splits)
    seconds["votes_and_singles"] = round(time.perf_counter() - start, 2)
    total = round(sum(seconds.values()), 2)
    print(f"{'total':>15}: {total:6.2f} s (target <= {TARGET_S:.0f} s)")
    return {
        "versions": versions() | library_versions(),
        "workload": {"pairs": N_PAIRS, "features": 22, "trials": TRIALS, "train_fraction": 0.1, "seed": SEED},
        "seconds": seconds,
        "total_seconds": total,
        "target_seconds": TARGET_S,
        "mean_kappa": kappa,
        "headline": [
            headline(
                "classifier: 50 trials x 6 learners, 4,304 pairs", total, "s", f"<= {TARGET_S:.0f} s", total <= TARGET_S
            )
        ],
    }


def main() -> None:
    """Run, print the table, write the JSON result."""
    started = machine()
    with prefect_server():  # the learners are Prefect tasks: they run as task runs, timed after start-up
        result = run()
    finish("classify", result, started)


if __name__ == "__main__":
    main()
