"""metrics_method_comparison (confidence methods side by side) and metrics_request_costs, against NumPy.

The reference below is written from the definitions in docs/metrics.md, in NumPy, per group: it shares nothing
with the SQL (nor with tests/metrics_fixtures.py's references) but the fixture's judgments.
"""

from __future__ import annotations

import math
from datetime import datetime

import numpy as np
import polars as pl
import pytest

from tests.helpers import run_cli
from tests.metrics_fixtures import Judgment, assert_close, fresh_warehouse, load_judgments, view

METHODS = ["verbalized", "logprob", "sampling", "self", "certainty"]
PERSONALITIES = ["default", "HN"]
N_PAIRS = 40
AT = datetime(2026, 1, 1)


def make_judgments() -> list[Judgment]:
    """One run: 2 personalities x CoT on/off x 5 methods over 40 pairs; a few label failures, missing confidences,
    confidences with many ties (verbalized-like) and without (logprob-like), 0 and 100 included."""
    rng = np.random.default_rng(17)
    relevance = rng.integers(0, 4, N_PAIRS)
    rows = []
    for m, method in enumerate(METHODS):
        for personality in PERSONALITIES:
            for cot in (False, True):
                for i, rel in enumerate(relevance):
                    label = int(rel) if rng.random() < 0.55 + 0.05 * m else int(rng.integers(0, 4))
                    if method in ("logprob", "sampling"):
                        confidence = float(rng.choice([0.0, 100.0, rng.uniform(0, 100)], p=[0.05, 0.15, 0.8]))
                    else:
                        confidence = float(rng.choice([10, 50, 70, 80, 85, 90, 95, 100]))
                    rows.append(
                        Judgment(
                            "r1",
                            personality,
                            cot,
                            method,
                            f"q{i % 4}",
                            f"d{i}",
                            int(rel),
                            None if rng.random() < 0.05 else label,
                            None if rng.random() < 0.05 else confidence,
                        )
                    )
    return rows


def request_ids(j: Judgment, i: int) -> tuple[str | None, str | None, list[str] | None]:
    """What each method references: verbalized a label and a confidence request (the confidence request shared by
    the two CoT settings of a pair: the cache answers both), logprob and certainty one request, self its one answer
    as both label and confidence request, sampling three votes whose first is also the label request."""
    stem = f"{j.personality}-{j.cot}-{i}"
    if j.confidence_method == "verbalized":
        return f"lab-v-{stem}", f"conf-v-{j.personality}-{i}", None
    if j.confidence_method == "sampling":
        votes = [f"vote-{stem}-{k}" for k in range(3)]
        return votes[0], None, votes
    if j.confidence_method == "self":
        return f"self-{stem}", f"self-{stem}", None
    return f"{j.confidence_method}-{stem}", None, None


def tokens_of(request_id: str) -> tuple[int | None, int | None]:
    """Deterministic token counts; the HN certainty request of pair 3 without CoT reported none."""
    if request_id == "certainty-HN-False-3":
        return None, None
    h = sum(map(ord, request_id))
    return 100 + h % 57, 5 + h % 13


@pytest.fixture(scope="module")
def warehouse():
    con = fresh_warehouse()
    judgments = make_judgments()
    load_judgments(con, judgments)
    references: dict[str, tuple[str | None, str | None, list[str] | None]] = {}
    ids = []
    for j in judgments:
        i = int(j.doc_id[1:])
        label_id, confidence_id, votes = request_ids(j, i)
        ids.append((j.personality, j.cot, j.confidence_method, j.doc_id, label_id, confidence_id, votes))
        for request_id in [label_id, confidence_id, *(votes or [])]:
            if request_id is not None:
                references[request_id] = (label_id, confidence_id, votes)
    # one statement each, not one per judgment and request (~1,800 statements took ~2 s)
    columns = {
        "personality": pl.String,
        "cot": pl.Boolean,
        "confidence_method": pl.String,
        "doc_id": pl.String,
        "label_id": pl.String,
        "confidence_id": pl.String,
        "votes": pl.List(pl.String),
    }
    con.register("test_request_ids", pl.DataFrame(ids, schema=columns, orient="row").to_arrow())
    con.execute(
        "update judgments as j set label_request_id = t.label_id, confidence_request_id = t.confidence_id, "
        "sample_request_ids = t.votes from test_request_ids as t where j.personality = t.personality "
        "and j.cot = t.cot and j.confidence_method = t.confidence_method and j.doc_id = t.doc_id"
    )
    requests = [(request_id, *tokens_of(request_id)) for request_id in sorted(references)]
    schema = {"request_id": pl.String, "prompt_tokens": pl.Int64, "completion_tokens": pl.Int64}
    con.register("test_requests", pl.DataFrame(requests, schema=schema, orient="row").to_arrow())
    con.execute(
        "insert into llm_requests (request_id, model, backend, prompt_hash, purpose, params, messages, attempts, "
        "attempt_texts, parse_status, prompt_tokens, completion_tokens, created_at) "
        "select request_id, 'test-model', 'test', 'h', 'label', '{}', '[]', 1, '[]', 'ok', prompt_tokens, "
        "completion_tokens, ? from test_requests",
        [AT],
    )
    yield con, judgments
    con.close()


# ------------------------------------------------------------------------------------ the NumPy reference


def reference_row(group: list[Judgment], threshold: float = 80) -> dict[str, float | int | None]:
    """Every metric column of one group, from the definitions."""
    truth = np.array([j.relevance for j in group if j.label is not None])
    label = np.array([j.label for j in group if j.label is not None])
    n = len(truth)
    matrix = np.zeros((4, 4))
    np.add.at(matrix, (truth, label), 1)
    rows, cols = matrix.sum(1), matrix.sum(0)
    expected = np.outer(rows, cols) / n
    weights = (np.arange(4)[:, None] - np.arange(4)[None, :]) ** 2.0
    p_o, p_e = np.trace(matrix) / n, np.sum(rows * cols) / n**2
    f1 = [2 * matrix[k, k] / (rows[k] + cols[k]) if rows[k] + cols[k] else 0.0 for k in range(4)]
    out: dict[str, float | int | None] = {
        "n_judgments": len(group),
        "n_scored": n,
        "accuracy": p_o,
        "cohen_kappa": (p_o - p_e) / (1 - p_e),
        "qwk": 1 - np.sum(weights * matrix) / np.sum(weights * expected),
        "macro_f1": float(np.mean(f1)),
    }

    kept = [j for j in group if j.label is not None and j.confidence is not None]
    y = np.array([j.label == j.relevance for j in kept], dtype=float)
    c = np.array([j.confidence for j in kept])
    p = c / 100
    m = len(c)

    def binned(bins: np.ndarray) -> tuple[float, float, int]:
        gaps = {b: abs(y[bins == b].mean() - p[bins == b].mean()) for b in np.unique(bins)}
        weighted = sum((bins == b).sum() / m * gap for b, gap in gaps.items())
        return float(weighted), float(max(gaps.values())), len(gaps)

    ece, mce, _ = binned(np.minimum(np.floor(c / 10), 9))
    strictly_lower = np.array([(c < value).sum() for value in c])
    ace, _, n_ace_bins = binned(10 * strictly_lower // m)
    clipped = np.clip(p, 1e-6, 1 - 1e-6)
    high, low = c >= 90, c <= 10

    def tail(hits: np.ndarray, members: np.ndarray) -> float:
        return (math.exp(hits[members].mean() - 0.5) - 1) * 100 * members.mean() / 2 if members.any() else 0.0

    wrong, right = y == 0, y == 1
    ro = 1 - p[wrong].sum() / wrong.sum() if wrong.any() else 1.0
    ru = 1 - (1 - p[right]).sum() / right.sum() if right.any() else 1.0
    above = c >= threshold
    out |= {
        "n_scored_confidence": m,
        "ece": ece,
        "ace": ace,
        "n_ace_bins": n_ace_bins,
        "mce": mce,
        "brier": float(np.mean((p - y) ** 2)),
        "nll": float(-np.mean(y * np.log(clipped) + (1 - y) * np.log(1 - clipped))),
        "th_score": tail(y, high) + tail(1 - y, low),
        "ro": ro,
        "ru": ru,
        "hmr": 2 * ro * ru / (ro + ru),
        "threshold": threshold,
        "n_confident": int(above.sum()),
        "accuracy_confident": float(y[above].mean()) if above.any() else None,
        "coverage_confident": float(above.mean()),
        "n_unconfident": int((~above).sum()),
        "accuracy_unconfident": float(y[~above].mean()) if (~above).any() else None,
        "coverage_unconfident": float((~above).mean()),
    }

    requests = [
        {r for r in [lab, conf, *(votes or [])] if r is not None}
        for lab, conf, votes in (request_ids(j, int(j.doc_id[1:])) for j in group)
    ]
    counted = [tokens_of(r) for ids in requests for r in sorted(ids)]
    out |= {
        "n_requests": len(counted),
        "n_requests_without_tokens": sum(prompt is None for prompt, _ in counted),
        "requests_per_judgment": len(counted) / len(group),
        "prompt_tokens_per_judgment": sum(prompt or 0 for prompt, _ in counted) / len(group),
        "completion_tokens_per_judgment": sum(completion or 0 for _, completion in counted) / len(group),
    }
    return out


def groups_of(judgments: list[Judgment]) -> dict[tuple[str, bool, str], list[Judgment]]:
    groups: dict[tuple[str, bool, str], list[Judgment]] = {}
    for j in judgments:
        groups.setdefault((j.personality, j.cot, j.confidence_method), []).append(j)
    return groups


# ----------------------------------------------------------------------------------------------- the tests


@pytest.mark.core
@pytest.mark.parametrize("threshold", [80, 90])
def test_every_column_of_every_method_matches_numpy(warehouse, threshold):
    con, judgments = warehouse
    query = "metrics_method_comparison" if threshold == 80 else f"from method_comparison_from(threshold := {threshold})"
    frame = view(con, query)
    groups = groups_of(judgments)
    assert frame.height == len(groups) == 2 * 2 * 5
    assert set(frame["confidence_method"]) == set(METHODS)
    for row in frame.iter_rows(named=True):
        key = (row["personality"], row["cot"], row["confidence_method"])
        for column, expected in reference_row(groups[key], threshold).items():
            assert_close(row[column], expected, f"{key} {column}")


@pytest.mark.core
def test_columns_are_the_metric_views_values(warehouse):
    """Nothing re-derived: each column is the value of the macro it names, row for row (to 1e-12: DuckDB may sum
    a group's bins in another order in another query, which moves ECE and ACE in the last bit)."""
    con, _ = warehouse
    keys = "using (run_id, personality, cot, confidence_method)"
    pairs = [
        ("cohen_kappa", "a"),
        ("macro_f1", "a"),
        ("ace", "c"),
        ("mce", "c"),
        ("nll", "c"),
        ("th_score", "c"),
        ("hmr", "r"),
        ("accuracy_confident", "t"),
        ("requests_per_judgment", "k"),
    ]
    far = " or ".join(
        f"abs(m.{col} - {alias}.{col}) > 1e-12 or (m.{col} is null) <> ({alias}.{col} is null)" for col, alias in pairs
    )
    mismatches = con.execute(
        f"""select count(*) from metrics_method_comparison as m
        inner join metrics_agreement as a {keys}
        inner join metrics_calibration as c {keys}
        inner join metrics_reliability as r {keys}
        inner join metrics_thresholds as t {keys}
        inner join metrics_request_costs as k {keys}
        where {far}"""
    ).fetchall()
    assert mismatches == [(0,)]


@pytest.mark.core
def test_costs_count_each_judgments_requests_once(warehouse):
    con, _ = warehouse
    costs = {
        (r["personality"], r["cot"], r["confidence_method"]): r
        for r in view(con, "metrics_request_costs").iter_rows(named=True)
    }
    # verbalized: label + confidence request (shared by the CoT settings, counted in each); sampling: 3 votes, the
    # label request among them; self: one answer referenced twice; logprob and certainty: one request
    per_judgment = {"verbalized": 2.0, "logprob": 1.0, "sampling": 3.0, "self": 1.0, "certainty": 1.0}
    for (personality, cot, method), row in costs.items():
        assert row["n_judgments"] == N_PAIRS
        assert row["requests_per_judgment"] == per_judgment[method], (personality, cot, method)
        missing = 1 if (personality, cot, method) == ("HN", False, "certainty") else 0
        assert row["n_requests_without_tokens"] == missing


@pytest.mark.core
def test_an_import_without_requests_costs_nothing():
    con = fresh_warehouse()
    try:
        load_judgments(
            con, [Judgment("imp", "default", False, "given", "q1", f"d{i}", i % 4, 2, 70.0) for i in range(4)]
        )
        row = view(con, "metrics_method_comparison").row(0, named=True)
        assert (row["n_requests"], row["requests_per_judgment"], row["prompt_tokens_per_judgment"]) == (0, 0.0, 0.0)
    finally:
        con.close()


@pytest.mark.integration
def test_cli_prints_the_methods_side_by_side(settings, capsys):
    from peras.warehouse import open_migrated

    with open_migrated(settings.warehouse) as con:
        load_judgments(con, [j for j in make_judgments() if j.personality == "default" and not j.cot])
    result = run_cli(
        capsys, "metrics", "--warehouse", str(settings.warehouse), "--view", "method-comparison", "--format", "csv"
    )
    assert result.exit_code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0].startswith("run_id,run_name,") and "requests_per_judgment" in lines[0]
    # default first, the methods by name
    assert [line.split(",")[8] for line in lines[1:]] == sorted(METHODS)
    table = run_cli(capsys, "metrics", "--warehouse", str(settings.warehouse), "--view", "method-comparison")
    assert table.exit_code == 0, table.err
    assert "method_comparison (metrics_method_comparison, 5 rows)" in table.out
    assert all(method in table.out for method in METHODS)
