"""Test helpers for the metric views: load judgments into a warehouse, and independent reference metrics.

The references are plain scikit-learn, `krippendorff` and NumPy over one group's arrays, written from the
definitions (not from the SQL): the SQL views are the product, these are what they are checked against.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import krippendorff
import numpy as np
import polars as pl
from hypothesis import strategies as st
from sklearn.metrics import accuracy_score, cohen_kappa_score, confusion_matrix, f1_score

from peras.prompting import CANONICAL_ORDER
from peras.warehouse import migrate

GROUP_KEYS = ["run_id", "personality", "cot", "confidence_method"]
JUDGED_AT = datetime(2026, 1, 1)


@dataclass(frozen=True)
class Judgment:
    """One judgment of a test group; label or confidence None for a failure."""

    run_id: str
    personality: str
    cot: bool
    confidence_method: str
    query_id: str
    doc_id: str
    relevance: int
    label: int | None
    confidence: float | None


def load_judgments(con: duckdb.DuckDBPyConnection, rows: Iterable[Judgment], collection_id: str = "coll") -> None:
    """Insert qrels, one pointwise run per run_id and the judgments, as a judge or an import would."""
    frame = pl.DataFrame([r.__dict__ for r in rows], schema_overrides={"label": pl.Int32, "confidence": pl.Float64})
    qrels = frame.select("query_id", "doc_id", "relevance").unique(["query_id", "doc_id"], keep="first")
    con.register("test_qrels", qrels.to_arrow())
    con.execute(
        "insert into qrels select ?, query_id, doc_id, relevance, 'test' from test_qrels on conflict do nothing",
        [collection_id],
    )
    for run_id in frame["run_id"].unique().sort():
        con.execute(
            "insert into judge_runs (run_id, run_name, source, task_type, collection_id, subset_name, model, "
            "backend, params, created_at) values (?, ?, 'llm', 'pointwise', ?, null, 'test-model', 'test', '{}', ?) "
            "on conflict do nothing",
            [run_id, f"name-{run_id}", collection_id, JUDGED_AT],
        )
    con.register("test_judgments", frame.to_arrow())
    con.execute(
        """insert into judgments (run_id, query_id, doc_id, personality, cot, confidence_method, label, confidence,
            expected_score, status, reason, label_request_id, confidence_request_id, judged_at)
        select run_id, query_id, doc_id, personality, cot, confidence_method, label, confidence, null,
               case when label is null then 'label_parse_failure'
                    when confidence is null then 'confidence_parse_failure' else 'ok' end,
               null, null, null, ?
        from test_judgments""",
        [JUDGED_AT],
    )


def view(con: duckdb.DuckDBPyConnection, name: str) -> pl.DataFrame:
    """A metric view (or any query) as a Polars frame."""
    query = name if " " in name else f"select * from {name}"
    return con.sql(query).pl()


def fresh_warehouse() -> duckdb.DuckDBPyConnection:
    """An in-memory warehouse with every migration, view and macro."""
    con = duckdb.connect()
    migrate(con)
    return con


def import_llmjudge(root: Path) -> tuple[Any, dict[str, Any]]:
    """A warehouse in root with LLMJudge ingested and its 33 submissions imported; the import reports by run name."""
    from flows.import_judgments import import_judgments
    from flows.ingest import ingest
    from peras.settings import load_settings
    from tests.conftest import SHARED_DATA

    settings = load_settings(warehouse=root / "peras.duckdb", data_dir=SHARED_DATA, reports_dir=root / "reports")
    ingest(preset="llmjudge", settings=settings)
    runs = sorted((SHARED_DATA / "llmjudge" / "judge-runs").glob("*.txt"))
    reports = {
        path.stem: import_judgments(path=str(path), name=path.stem, collection="llmjudge", settings=settings)
        for path in runs
    }
    return settings, reports


def clear_judgments(con: duckdb.DuckDBPyConnection) -> None:
    """Empty the tables a metric test writes, so one warehouse serves many hypothesis examples."""
    for table in ("judgments", "judge_runs", "qrels"):
        con.execute(f"delete from {table}")


# ------------------------------------------------------------------------------------- groups of judgments

PERSONALITIES = list(CANONICAL_ORDER)
Cell = tuple[int, int | None, float | None]  # relevance, label (None: parse failure), confidence (None: missing)


def group_key(index: int) -> tuple[str, str, bool, str]:
    """A distinct (run_id, personality, cot, confidence_method) for the index-th test group."""
    return ("run", PERSONALITIES[index % 11], bool(index // 11 % 2), f"method{index // 22}")


def judgments_of(groups: list[list[Cell]]) -> list[Judgment]:
    """Each group judges its own pairs, so any relevance mix is possible in any group."""
    return [
        Judgment(*group_key(g), f"q{g}-{j % 3}", f"d{g}-{j}", relevance, label, confidence)
        for g, cells in enumerate(groups)
        for j, (relevance, label, confidence) in enumerate(cells)
    ]


def rows_by_key(frame: pl.DataFrame) -> dict[tuple[str, str, bool, str], dict[str, object]]:
    """A group-level view's rows keyed like group_key."""
    return {tuple(row[k] for k in GROUP_KEYS): row for row in frame.iter_rows(named=True)}  # type: ignore[misc]


def labelled(cells: list[Cell]) -> tuple[np.ndarray, np.ndarray]:
    """Relevance and label of the cells that have a label."""
    kept = [(r, lab) for r, lab, _ in cells if lab is not None]
    return np.array([r for r, _ in kept], dtype=int), np.array([lab for _, lab in kept], dtype=int)


def scored(cells: list[Cell]) -> tuple[np.ndarray, np.ndarray]:
    """Correctness and confidence of the cells that have a label and a confidence."""
    kept = [(r == lab, c) for r, lab, c in cells if lab is not None and c is not None]
    return np.array([k for k, _ in kept], dtype=bool), np.array([c for _, c in kept], dtype=float)


LABELS = st.one_of(st.integers(0, 3), st.integers(0, 3), st.integers(0, 3), st.none())
CONFIDENCES = st.one_of(
    st.integers(0, 100).map(float),  # verbalized: whole numbers, many ties
    st.sampled_from([0.0, 5.0, 10.0, 80.0, 90.0, 95.0, 100.0]),  # the edges of every bin and tail
    st.floats(0, 100, allow_nan=False),  # logprob / sampling: anything in between
    st.none(),
)
CELLS = st.tuples(st.integers(0, 3), LABELS, CONFIDENCES)
# many groups at once, as the views see them; small groups make degenerate cases (one class, one label) common
GROUPS = st.lists(st.lists(CELLS, min_size=1, max_size=30), min_size=1, max_size=12)


# ---------------------------------------------------------------------------------------------- references


def _quiet(func, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return func(*args, **kwargs)


def _none_if_nan(value: float) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def reference_agreement(truth: np.ndarray, label: np.ndarray) -> dict[str, float | None]:
    """scikit-learn / krippendorff agreement of one group's labelled pairs."""
    if len(truth) == 0:
        return dict.fromkeys(
            [
                "accuracy",
                "cohen_kappa",
                "qwk",
                "macro_f1",
                "kappa_bin_0_123",
                "kappa_bin_01_23",
                "kappa_bin_012_3",
                "krippendorff_alpha",
            ]
        )
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


def assert_close(actual: object, expected: object, where: str, tol: float = 1e-9) -> None:
    """Equal within tol (absolute, and relative for large values); None only equals None."""
    if expected is None or actual is None:
        assert actual is None and expected is None, f"{where}: view {actual!r}, reference {expected!r}"
        return
    assert math.isclose(float(actual), float(expected), rel_tol=tol, abs_tol=tol), (
        f"{where}: view {actual!r}, reference {expected!r}"
    )
