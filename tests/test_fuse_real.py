"""Issue 20 on real data: five LLMJudge challenge submissions (labels only) fused by majority voting, the comparison
table against a plain-Python vote over the shared files themselves."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, f1_score

from flows.classify import classify
from flows.fuse import fuse
from flows.import_judgments import import_judgments
from tasks.classify.tasks import draw_splits

pytestmark = pytest.mark.integration

RUNS = ("Olz-gpt4o", "RMITIR-llama70B", "TREMA-CoT", "h2oloo-zeroshot2", "willia-umbrela1")


def read_labels(path) -> dict[tuple[str, str], str]:
    return {(q, d): label for q, _, d, label in (line.split() for line in path.read_text().splitlines() if line)}


def scores(y: np.ndarray, label: np.ndarray) -> dict[str, float]:
    return {
        "accuracy": float((y == label).mean()),
        "cohen_kappa": cohen_kappa_score(y, label, labels=[0, 1, 2, 3]),
        "qwk": cohen_kappa_score(y, label, labels=[0, 1, 2, 3], weights="quadratic"),
        "macro_f1": f1_score(y, label, labels=[0, 1, 2, 3], average="macro", zero_division=0),
    }


def plain_majority(shared_data) -> tuple[dict[str, float], dict[str, str], np.ndarray, np.ndarray]:
    """The majority vote over the files (ties to the lower label; a pair with a label outside 0-3 left out), its
    confidence the winner's share of the votes, scored against the test qrels; and the best submission per metric."""
    folder = shared_data / "llmjudge"
    truth = read_labels(folder / "llmjudge_test_qrel_idx.txt")
    runs = [read_labels(folder / "judge-runs" / f"{name}.txt") for name in RUNS]
    y, label, share, alone = [], [], [], []
    for pair in sorted(truth):
        votes = [run[pair] for run in runs]
        if any(v not in ("0", "1", "2", "3") for v in votes):
            continue
        counts = Counter(int(v) for v in votes)
        top = max(counts.values())
        winner = min(k for k, n in counts.items() if n == top)
        y.append(int(truth[pair]))
        label.append(winner)
        share.append(top / len(votes))
        alone.append([int(v) for v in votes])
    y_, label_, p = np.array(y), np.array(label), np.array(share)
    correct = (y_ == label_).astype(float)
    bins = np.minimum(np.floor(p * 10), 9)
    ro, ru = 1 - p[correct == 0].mean(), 1 - (1 - p[correct == 1]).mean()
    each = {name: scores(y_, np.array(alone)[:, i]) for i, name in enumerate(RUNS)}
    best = {metric: max(RUNS, key=lambda name: each[name][metric]) for metric in each[RUNS[0]]}
    return (
        {
            "n": len(y),
            **scores(y_, label_),
            "ece": sum(abs(correct[bins == b].sum() - p[bins == b].sum()) for b in np.unique(bins)) / len(y),
            "brier": ((p - correct) ** 2).mean(),
            "ro": ro,
            "ru": ru,
            "hmr": 2 * ro * ru / (ro + ru),
        },
        best,
        y_,
        label_,
    )


def test_five_llmjudge_submissions_fused_by_majority(settings, shared_data, ingested):
    ingested("llmjudge", settings)
    for name in RUNS:
        import_judgments(
            str(shared_data / "llmjudge" / "judge-runs" / f"{name}.txt"), name, "llmjudge", settings=settings
        )

    table = classify(collection="llmjudge", runs=list(RUNS), trials=2, learners=["rf"], settings=settings)
    summary = fuse(collection="llmjudge", runs=list(RUNS), baselines_only=True, settings=settings)

    expected, expected_best, y, majority = plain_majority(shared_data)
    # 4,423 test pairs; RMITIR-llama70B labels two outside 0-3, h2oloo-zeroshot2 one: those pairs are left out
    assert (summary["n_judges"], summary["n_pairs"], expected["n"]) == (5, 4420, 4420)
    assert summary["baselines"] == ["vote_majority"]  # label-only runs: no confidence to weigh
    got = {(r["row_name"], r["metric"]): r for r in summary["rows"]}
    for metric, value in expected.items():
        if metric != "n":
            assert got[("vote_majority", metric)]["value"] == pytest.approx(value, abs=1e-12), metric
    names = {"vote_majority", "best single judge", "Random Forest", "vote_majority (test parts)"}
    assert {r["row_name"] for r in summary["rows"]} == names
    # the classify run on the same streams: its Random Forest, and the majority vote on its two test parts
    rf = next(row for row in table.rows if row.learner == "rf")
    assert got[("Random Forest", "cohen_kappa")]["value"] == pytest.approx(rf.mean["kappa"], abs=1e-12)
    assert got[("Random Forest", "cohen_kappa")]["detail"] == table.classify_run_id
    parts = [scores(y[s.test], majority[s.test]) for s in draw_splits.fn(y, 2, 42, 0.1)]
    for metric in ("cohen_kappa", "qwk", "macro_f1"):
        mean = np.mean([part[metric] for part in parts])
        assert got[("vote_majority (test parts)", metric)]["value"] == pytest.approx(mean, abs=1e-12), metric
    best = {r["metric"]: r["detail"] for r in summary["rows"] if r["row_kind"] == "best_single"}
    # label-only submissions: accuracy and agreement only (no confidence, no calibration)
    assert best == expected_best
    assert best == {"accuracy": "h2oloo-zeroshot2", "cohen_kappa": "willia-umbrela1", "qwk": "Olz-gpt4o"} | {
        "macro_f1": "willia-umbrela1"
    }
    assert summary["disagreement"] is None
