"""Issue 21 part 4: `peras holes` through the real CLI.

On LLMJudge with a real imported submission filling the holes (checked against ir_measures and scipy computed here
on the same hidden pairs), and on the sample judged now by the scripted judge, into the report.
"""

from __future__ import annotations

import math

import ir_measures
import polars as pl
import pytest
from scipy import stats

from flows.import_judgments import import_judgments
from support.fake_openai import FakeOpenAI
from tasks.evaluate.qrels import hidden_at, hide_labels
from tests.helpers import run_cli
from tests.test_evaluate import GRADE_OF_DOC, TEXTS, judged, stored, write_runs  # noqa: F401 - judged: a fixture

pytestmark = pytest.mark.integration


def read_qrels(path) -> pl.DataFrame:
    rows = [(q.query_id, q.doc_id, q.relevance) for q in ir_measures.read_trec_qrels(str(path))]
    return pl.DataFrame(rows, schema=["query_id", "doc_id", "relevance"], orient="row")


def mean_ndcg(qrels: pl.DataFrame, run_path) -> float:
    measure = ir_measures.parse_measure("nDCG@10")
    records = [ir_measures.Qrel(*row) for row in qrels.iter_rows()]
    return ir_measures.calc_aggregate([measure], records, list(ir_measures.read_trec_run(str(run_path))))[measure]


def test_llmjudge_holes_filled_by_an_imported_run(settings, shared_data, tmp_path, capsys, ingested):
    ingested("llmjudge", settings)
    submission = shared_data / "llmjudge" / "judge-runs" / "Olz-gpt4o.txt"
    import_judgments(path=str(submission), name="olz", collection="llmjudge", out_of_range="clip", settings=settings)
    runs = [write_one(tmp_path, shared_data, name, sort) for name, sort in SYSTEMS.items()]
    args = ["holes", "llmjudge", "--run", "olz", "--share", "0.5", "--warehouse", str(settings.warehouse)]
    result = run_cli(capsys, *args, *(a for r in runs for a in ("--run-file", str(r))))
    assert result.exit_code == 0, result.err
    assert result.out.splitlines()[0] == (
        "llmjudge: labels of olz (default) fill the holes of 4,423 human labels; 3 systems"
    )
    # The same hidden pairs, filled and scored here with ir_measures and scipy.
    test = read_qrels(shared_data / "llmjudge" / "llmjudge_test_qrel_idx.txt")
    labels = read_qrels(submission).with_columns(pl.col("relevance").clip(0, 3))
    hidden = hidden_at(hide_labels(test, 42), 0.5)
    grades = test["relevance"].value_counts()
    assert hidden.height == sum(math.floor(0.5 * n + 0.5) for n in grades["count"]) == 2213
    joined = hidden.join(labels, on=["query_id", "doc_id"], suffix="_llm")
    filled = test.join(joined.select("query_id", "doc_id", "relevance_llm"), on=["query_id", "doc_id"], how="left")
    filled = filled.select("query_id", "doc_id", relevance=pl.coalesce("relevance_llm", "relevance"))
    human_scores = [mean_ndcg(test, r) for r in runs]
    filled_scores = [mean_ndcg(filled, r) for r in runs]
    row = stored(settings, "select n_hidden, hidden_accuracy, n_systems, kendall_tau, spearman_rho from holes_curve")
    expected_accuracy = (joined["relevance"] == joined["relevance_llm"]).mean()
    assert row == [
        (2213, pytest.approx(expected_accuracy), 3, stats.kendalltau(human_scores, filled_scores).statistic,
         pytest.approx(stats.spearmanr(human_scores, filled_scores).statistic))
    ]  # fmt: skip


# Three systems over the LLMJudge test pairs, from their human grades: good, middling (by doc_id), bad.
SYSTEMS = {"good": "grade_desc", "middling": "doc_id", "bad": "grade_asc"}


def write_one(tmp_path, shared_data, name: str, sort: str):
    test = read_qrels(shared_data / "llmjudge" / "llmjudge_test_qrel_idx.txt")
    keys = {
        "grade_desc": [pl.col("relevance").neg(), "doc_id"],
        "doc_id": ["doc_id"],
        "grade_asc": ["relevance", "doc_id"],
    }
    lines = []
    for (query_id,), rows in test.sort("query_id").group_by("query_id", maintain_order=True):
        ranked = rows.sort(keys[sort])["doc_id"].to_list()
        lines += [f"{query_id} Q0 {d} {i} {1000 - i} {name}" for i, d in enumerate(ranked, start=1)]
    path = tmp_path / f"{name}.run"
    path.write_text("\n".join(lines) + "\n")
    return path


def truthful(request: dict) -> str:
    """The human grade of the passage shown; confidence 90."""
    content = str(request["messages"])
    if "relevance score is" in content:
        return "90"
    return str(next(GRADE_OF_DOC[doc] for text, doc in TEXTS.items() if text in content))


def test_sample_holes_judged_now_and_resumed(settings, tmp_path, capsys, monkeypatch, ingested):
    monkeypatch.setenv("PERAS_ENDPOINT_SLOTS_DIR", str(tmp_path / "slots"))
    ingested("sample", settings)
    runs = write_runs(tmp_path / "three.run")
    warehouse = ["--warehouse", str(settings.warehouse)]
    with FakeOpenAI(truthful) as server:
        endpoint = ["--base-url", server.base_url, "--model", "fake-model"]
        result = run_cli(capsys, "holes", "sample", "--run-file", str(runs), "--share", "0.3", "--share", "0.9",
                         *endpoint, *warehouse)  # fmt: skip
        assert result.exit_code == 0, result.err
        sent = len(server.chat_requests)
        assert sent == 80  # 40 pairs x (label + confidence), the default personality, no CoT
        again = run_cli(capsys, "holes", "sample", "--run-file", str(runs), *endpoint, *warehouse)
        assert again.exit_code == 0, again.err
        assert len(server.chat_requests) == sent  # the judge run resumes: nothing asked twice
    lines = result.out.splitlines()
    assert lines[0] == "sample: labels of holes-sample (default) fill the holes of 40 human labels; 3 systems"
    # a truthful judge: every hidden label is the human one and the ranking never moves (12 = 3 per grade)
    rows = stored(settings, "select share, n_hidden, hidden_accuracy, kendall_tau, tau_ap from holes_curve "
                  "order by created_at, share")  # fmt: skip
    assert rows[:2] == [(0.3, 12, 1.0, 1.0, 1.0), (0.9, 36, 1.0, 1.0, 1.0)]
    assert [r[:2] for r in rows[2:]] == [(s / 10, 4 * s) for s in range(1, 10)]


def test_sample_holes_filled_by_the_opposite_judge_into_the_report(judged, tmp_path, capsys):  # noqa: F811
    runs = write_runs(tmp_path / "three.run")
    warehouse = ["--warehouse", str(judged.warehouse)]
    args = ["holes", "sample", "--run", "scripted", "--personality", "HA", "--run-file", str(runs)]
    result = run_cli(capsys, *args, "--share", "0.3", "--share", "0.9", *warehouse)
    assert result.exit_code == 0, result.err
    assert result.out.splitlines()[0] == (
        "sample: labels of scripted (HA) fill the holes of 40 human labels; 3 systems"
    )
    # HA says 3 - grade: every hidden label is wrong (12 = 3 per grade hidden at 30%, 36 at 90%)
    rows = stored(judged, "select share, n_hidden, hidden_accuracy, n_systems from holes_curve order by share")
    assert rows == [(0.3, 12, 0.0, 3), (0.9, 36, 0.0, 3)]
    # at 90% the filled qrels are nearly HA's: the ranking turns over (HA alone ranks the three systems reversed)
    assert stored(judged, "select kendall_tau from holes_curve where share = 0.9") == [(-1.0,)]
    report = run_cli(capsys, "report", "--output", str(tmp_path / "report"), *warehouse)
    assert report.exit_code == 0, report.err
    html = (tmp_path / "report" / "report.html").read_text()
    assert html.count("sample: holes filled by scripted (HA), 40 human labels, 3 systems, seed 42") >= 2
    assert len(list((tmp_path / "report" / "figures").glob("holes-*.png"))) == 1
