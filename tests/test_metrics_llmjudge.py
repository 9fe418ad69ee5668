"""Real judgments: the 33 LLMJudge submissions imported and scored against the test qrels, checked per run
against scikit-learn and `krippendorff` computed straight from the files."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from support.reference_metrics import reference_agreement, reference_confusion
from tests.conftest import SHARED_DATA
from tests.metrics_fixtures import assert_close, import_llmjudge

pytestmark = pytest.mark.integration

RUNS_DIR = SHARED_DATA / "llmjudge" / "judge-runs"
TEST_QRELS = SHARED_DATA / "llmjudge" / "llmjudge_test_qrel_idx.txt"
N_TEST_PAIRS = 4423


@pytest.fixture(scope="module")
def llmjudge(tmp_path_factory, ingested):
    """A warehouse with LLMJudge ingested and every submission imported; the import reports by run name."""
    return import_llmjudge(tmp_path_factory.mktemp("llmjudge"), ingested)


def read_pairs(path: Path) -> dict[tuple[str, str], str]:
    """(query_id, doc_id) -> the label as written, straight from a file."""
    return {(fields[0], fields[2]): fields[3] for fields in (line.split() for line in path.read_text().splitlines())}


def test_every_submission_imports_with_its_problems_reported(llmjudge):
    _, reports = llmjudge
    assert len(reports) == 33
    for name, report in reports.items():
        bad = {"RMITIR-llama70B": 2, "h2oloo-zeroshot2": 1}.get(name, 0)
        assert (report.n_lines, report.n_judgments, report.n_scored) == (N_TEST_PAIRS, N_TEST_PAIRS, N_TEST_PAIRS - bad)
        assert report.counts == {
            "bad_label": bad,
            "clipped": 0,
            "bad_confidence": 0,
            "duplicate": 0,
            "not_in_qrels": 0,
            "missing_from_file": 0,
        }, name
    assert reports["h2oloo-zeroshot2"].examples["bad_label"] == [
        {"line": 3187, "query_id": "q2", "doc_id": "p8028", "value": "10"}
    ]
    assert [e["line"] for e in reports["RMITIR-llama70B"].examples["bad_label"]] == [2449, 3825]


def test_agreement_and_confusion_match_sklearn_per_run(llmjudge):
    settings, _ = llmjudge
    truth_of = {pair: int(label) for pair, label in read_pairs(TEST_QRELS).items()}
    con = duckdb.connect(str(settings.warehouse), read_only=True)
    agreement = {row["run_name"]: row for row in con.sql("select * from metrics_agreement").pl().iter_rows(named=True)}
    confusion = con.sql("select run_name, relevance, label, n_judgments from metrics_confusion").fetchall()
    calibration = con.sql("select run_name, n_confidence_missing, ece, th_score from metrics_calibration").fetchall()
    con.close()
    assert len(agreement) == 33
    cells = {(run, relevance, label): n for run, relevance, label, n in confusion}
    for path in sorted(RUNS_DIR.glob("*.txt")):
        judged = read_pairs(path)
        valid = [(truth_of[pair], int(label)) for pair, label in judged.items() if label in {"0", "1", "2", "3"}]
        truth, label = np.array([t for t, _ in valid]), np.array([lab for _, lab in valid])
        row = agreement[path.stem]
        assert (row["n_scored"], row["n_label_failures"]) == (len(valid), len(judged) - len(valid))
        for column, expected in reference_agreement(truth, label).items():
            assert_close(row[column], expected, f"{path.stem} {column}")
        matrix = reference_confusion(truth, label)
        assert all(cells[(path.stem, i, j)] == matrix[i, j] for i in range(4) for j in range(4)), path.stem
    # the submissions carry no confidence: every calibration number is null, every judgment counted as missing
    assert all(
        missing == N_TEST_PAIRS - {"RMITIR-llama70B": 2, "h2oloo-zeroshot2": 1}.get(run, 0)
        and ece is None
        and th is None
        for run, missing, ece, th in calibration
    )


def test_best_submissions_by_kappa(llmjudge):
    settings, _ = llmjudge
    con = duckdb.connect(str(settings.warehouse), read_only=True)
    top = con.sql("select run_name, round(cohen_kappa, 4) from metrics_agreement order by cohen_kappa desc limit 5")
    rows = top.fetchall()
    con.close()
    assert rows == [
        ("willia-umbrela1", 0.2863),
        ("h2oloo-zeroshot1", 0.2817),
        ("h2oloo-fewself", 0.2774),
        ("willia-umbrela3", 0.2741),
        ("willia-umbrela2", 0.2688),
    ]


def test_oracle_of_a_single_default_run_is_default(llmjudge):
    settings, _ = llmjudge
    con = duckdb.connect(str(settings.warehouse), read_only=True)
    best = con.sql("select distinct best_personality from metrics_oracle").fetchall()
    n_compared = con.sql("select count(*) from metrics_vs_default").fetchall()[0][0]
    con.close()
    assert best == [("default",)] and n_compared == 0


def read_labels(path: Path) -> dict[tuple[str, str], int]:
    """(query_id, doc_id) -> label of the pairs a file labels 0-3 (what the import scores)."""
    return {pair: int(label) for pair, label in read_pairs(path).items() if label in {"0", "1", "2", "3"}}


@pytest.mark.parametrize(
    ("run_a", "run_b", "n_pairs", "kappa"),
    [
        # RMITIR-llama70B has two labels outside 0-3: the pair is scored on the 4,421 pairs both labelled
        ("willia-umbrela1", "RMITIR-llama70B", 4421, 0.4150),
        # h2oloo-zeroshot2 has one: 4,422 common pairs
        ("h2oloo-zeroshot2", "h2oloo-fewself", 4422, 0.5365),
        # two runs with every pair labelled
        ("willia-umbrela1", "willia-umbrela2", 4423, 0.7342),
    ],
)
def test_judge_agreement_is_sklearns_kappa_on_the_common_pairs(llmjudge, run_a, run_b, n_pairs, kappa):
    settings, _ = llmjudge
    con = duckdb.connect(str(settings.warehouse), read_only=True)
    rows = con.execute("select run_name_a, run_name_b, n_pairs, cohen_kappa from metrics_judge_agreement").fetchall()
    con.close()
    by_pair = {(a, b): (n, k) for a, b, n, k in rows}
    assert len(rows) == 33 * 33  # every two runs share pairs (one collection)
    assert all(by_pair[a, a][1] == 1.0 for a, _ in by_pair)
    labels_a, labels_b = read_labels(RUNS_DIR / f"{run_a}.txt"), read_labels(RUNS_DIR / f"{run_b}.txt")
    common = sorted(set(labels_a) & set(labels_b))
    expected = cohen_kappa_score([labels_a[p] for p in common], [labels_b[p] for p in common])
    assert by_pair[run_a, run_b][0] == by_pair[run_b, run_a][0] == len(common) == n_pairs
    assert_close(by_pair[run_a, run_b][1], expected, f"{run_a} x {run_b}")
    assert_close(by_pair[run_b, run_a][1], expected, f"{run_b} x {run_a}")
    assert round(by_pair[run_a, run_b][1], 4) == kappa
