"""Real judgments: the 33 LLMJudge submissions imported and scored against the test qrels, checked per run
against scikit-learn and `krippendorff` computed straight from the files."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pytest

from flows.import_judgments import import_judgments
from flows.ingest import ingest
from peras.settings import load_settings
from tests.conftest import SHARED_DATA
from tests.metrics_fixtures import assert_close, reference_agreement, reference_confusion

pytestmark = pytest.mark.integration

RUNS_DIR = SHARED_DATA / "llmjudge" / "judge-runs"
TEST_QRELS = SHARED_DATA / "llmjudge" / "llmjudge_test_qrel_idx.txt"
N_TEST_PAIRS = 4423


@pytest.fixture(scope="module")
def llmjudge(tmp_path_factory):
    """A warehouse with LLMJudge ingested and every submission imported; the import reports by run name."""
    settings = load_settings(warehouse=tmp_path_factory.mktemp("llmjudge") / "peras.duckdb", data_dir=SHARED_DATA)
    ingest(preset="llmjudge", settings=settings)
    reports = {path.stem: import_judgments(path=str(path), name=path.stem, collection="llmjudge", settings=settings)
               for path in sorted(RUNS_DIR.glob("*.txt"))}
    return settings, reports


def read_pairs(path: Path) -> dict[tuple[str, str], str]:
    """(query_id, doc_id) -> the label as written, straight from a file."""
    return {(fields[0], fields[2]): fields[3] for fields in (line.split() for line in path.read_text().splitlines())}


def test_every_submission_imports_with_its_problems_reported(llmjudge):
    _, reports = llmjudge
    assert len(reports) == 33
    for name, report in reports.items():
        bad = {"RMITIR-llama70B": 2, "h2oloo-zeroshot2": 1}.get(name, 0)
        assert (report.n_lines, report.n_judgments, report.n_scored) == (N_TEST_PAIRS, N_TEST_PAIRS, N_TEST_PAIRS - bad)
        assert report.counts == {"bad_label": bad, "bad_confidence": 0, "duplicate": 0, "not_in_qrels": 0,
                                 "missing_from_file": 0}, name
    assert reports["h2oloo-zeroshot2"].examples["bad_label"] == [
        {"line": 3187, "query_id": "q2", "doc_id": "p8028", "value": "10"}]
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
    assert all(missing == N_TEST_PAIRS - {"RMITIR-llama70B": 2, "h2oloo-zeroshot2": 1}.get(run, 0)
               and ece is None and th is None for run, missing, ece, th in calibration)


def test_best_submissions_by_kappa(llmjudge):
    settings, _ = llmjudge
    con = duckdb.connect(str(settings.warehouse), read_only=True)
    top = con.sql("select run_name, round(cohen_kappa, 4) from metrics_agreement order by cohen_kappa desc limit 5")
    rows = top.fetchall()
    con.close()
    assert rows == [("willia-umbrela1", 0.2863), ("h2oloo-zeroshot1", 0.2817), ("h2oloo-fewself", 0.2774),
                    ("willia-umbrela3", 0.2741), ("willia-umbrela2", 0.2688)]


def test_oracle_of_a_single_default_run_is_default(llmjudge):
    settings, _ = llmjudge
    con = duckdb.connect(str(settings.warehouse), read_only=True)
    best = con.sql("select distinct best_personality from metrics_oracle").fetchall()
    n_compared = con.sql("select count(*) from metrics_vs_default").fetchall()[0][0]
    con.close()
    assert best == [("default",)] and n_compared == 0
