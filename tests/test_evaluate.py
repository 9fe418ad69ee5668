"""Issue 21: `peras export-qrels`, `peras evaluate`, `peras build-runs` through the real CLI.

A judge run on the sample (default: the human grade, HA: its opposite) written into the warehouse; runs built with
bm25s on the real DL19 files are scored exactly as ir_measures scores them directly.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import ir_measures
import polars as pl
import pytest

from flows.ingest import ingest
from peras.paths import PROJECT_ROOT
from peras.warehouse import open_migrated
from support.fake_openai import FakeOpenAI
from tasks.evaluate.qrels import fill_holes, hidden_at, hide_labels
from tests.helpers import run_cli
from tests.test_judge import rows as stored

SAMPLE = PROJECT_ROOT / "peras" / "data" / "sample"


def sample_qrels() -> dict[tuple[str, str], int]:
    """(query_id, doc_id) -> grade of the shipped sample."""
    lines = (SAMPLE / "qrels.txt").read_text().splitlines()
    return {(f[0], f[2]): int(f[3]) for f in (line.split() for line in lines)}


def sample_texts() -> dict[str, str]:
    """passage text -> doc_id."""
    records = [json.loads(line) for line in (SAMPLE / "passages.jsonl").read_text().splitlines()]
    return {r["doc"]: r["docid"] for r in records}


QRELS = sample_qrels()
GRADE_OF_DOC = {doc: grade for (_, doc), grade in QRELS.items()}
TEXTS = sample_texts()


def judged_rows(run_id: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The scripted judge's judgments of the sample (default: the grade, HA: 3 - grade; confidence 90) and the
    label requests they reference."""
    judgments, requests = [], []
    for (query_id, doc_id), grade in QRELS.items():
        for personality, label in (("default", grade), ("HA", 3 - grade)):
            request_id = f"req-{personality}-{query_id}-{doc_id}"
            judgments.append(
                {"run_id": run_id, "query_id": query_id, "doc_id": doc_id, "personality": personality, "cot": False,
                 "confidence_method": "verbalized", "label": label, "confidence": 90.0, "status": "ok",
                 "label_request_id": request_id, "judged_at": datetime(2026, 1, 1)}
            )  # fmt: skip
            requests.append(
                {"request_id": request_id, "model": "judge-model", "backend": "test", "prompt_hash": request_id,
                 "purpose": "label", "params": "{}", "messages": "[]", "raw_text": str(label), "attempts": 1,
                 "attempt_texts": "[]", "parsed_value": float(label), "parse_status": "ok",
                 "created_at": datetime(2026, 1, 1)}
            )  # fmt: skip
    return pl.DataFrame(judgments), pl.DataFrame(requests)


@pytest.fixture
def judged(settings, tmp_path, monkeypatch, ingested):
    """The sample and a published judge run 'scripted' of default and HA on it, written into the warehouse."""
    monkeypatch.setenv("PERAS_ENDPOINT_SLOTS_DIR", str(tmp_path / "slots"))
    ingested("sample", settings)
    run = {"run_id": "run-scripted", "run_name": "scripted", "source": "llm", "task_type": "pointwise",
           "collection_id": "sample", "model": "judge-model", "backend": "test", "params": "{}",
           "created_at": datetime(2026, 1, 1)}  # fmt: skip
    judgments, requests = judged_rows("run-scripted")
    with open_migrated(settings.warehouse) as con:
        for table, frame in (("judge_runs", pl.DataFrame([run])), ("judgments", judgments), ("llm_requests", requests)):
            con.register("frame", frame.to_arrow())
            con.execute(f"insert into {table} by name select * from frame")  # noqa: S608 - fixed table names
            con.unregister("frame")
    return settings


def write_runs(path: Path) -> Path:
    """Three systems over the sample: best passages first, worst first, and grades 2, 1, 3, 0 (in between)."""
    lines = []
    orders = {
        "perfect": lambda item: (-item[1], item[0]),
        "reversed": lambda item: (item[1], item[0]),
        "middling": lambda item: (abs(item[1] - 1.5), -item[1], item[0]),
    }
    for system, key in orders.items():
        for query_id in sorted({q for q, _ in QRELS}):
            docs = sorted(((d, g) for (q, d), g in QRELS.items() if q == query_id), key=key)
            lines += [f"{query_id} Q0 {d} {i} {100 - i} {system}" for i, (d, _) in enumerate(docs, start=1)]
    path.write_text("\n".join(lines) + "\n")
    return path


def cli(capsys, settings, *args: str):
    return run_cli(capsys, *args, "--warehouse", str(settings.warehouse))


@pytest.mark.integration
def test_export_of_a_judged_run_equals_its_stored_labels(judged, tmp_path, capsys):
    out = tmp_path / "ha.qrels"
    result = cli(capsys, judged, "export-qrels", "--run", "scripted", "--personality", "HA", "--output", str(out))
    assert result.exit_code == 0, result.err
    assert result.out == f"{out}: 40 pairs (40 LLM labels, 0 human); confidences in {out}.confidence.tsv\n"
    labels = stored(judged, "select query_id, doc_id, label from judgments where personality = 'HA' order by 1, 2")
    assert [tuple(line.split()) for line in out.read_text().splitlines()] == [(q, "0", d, str(v)) for q, d, v in labels]
    # round trip through ir_measures' reader
    assert {(q.query_id, q.doc_id, q.relevance) for q in ir_measures.read_trec_qrels(str(out))} == set(labels)
    assert {(q, d, v) for (q, d), v in ((k, 3 - g) for k, g in QRELS.items())} == set(labels)
    side = pl.read_csv(f"{out}.confidence.tsv", separator="\t", schema_overrides={"query_id": pl.String})
    assert side.columns == ["query_id", "doc_id", "relevance", "confidence", "source"]
    assert (side.height, set(side["confidence"]), set(side["source"])) == (40, {90.0}, {"llm"})


@pytest.mark.integration
def test_majority_export_breaks_ties_to_the_lower_label(judged, tmp_path, capsys):
    out = tmp_path / "majority.qrels"
    result = cli(capsys, judged, "export-qrels", "--run", "scripted", "--aggregate", "majority", "--output", str(out))
    assert result.exit_code == 0, result.err
    # default says g, HA says 3 - g, both at 90: a tie every time, won by the lower label
    expected = {(q, d, min(g, 3 - g)) for (q, d), g in QRELS.items()}
    assert {(q.query_id, q.doc_id, q.relevance) for q in ir_measures.read_trec_qrels(str(out))} == expected


@pytest.mark.integration
def test_unavailable_aggregates_and_runs_are_usage_errors(judged, tmp_path, capsys):
    out = str(tmp_path / "x.qrels")
    result = cli(capsys, judged, "export-qrels", "--run", "scripted", "--aggregate", "fuser", "--output", out)
    assert result.exit_code == 2
    assert "no published fuse run with fuser answers fuses judge run 'scripted'" in result.err
    result = cli(capsys, judged, "export-qrels", "--run", "nope", "--output", out)
    assert (result.exit_code, "no judge run named 'nope'" in result.err) == (2, True)
    assert not Path(out).exists()


@pytest.mark.integration
def test_evaluate_ranks_personalities_by_how_alike_they_rank_systems(judged, tmp_path, capsys):
    runs = write_runs(tmp_path / "three.run")
    result = cli(capsys, judged, "evaluate", str(runs), "--collection", "sample", "--qrels", "scripted",
                 "--measure", "nDCG@10", "--measure", "P(rel=2)@3", "--format", "json")  # fmt: skip
    assert result.exit_code == 0, result.err
    summary = json.loads(result.out)
    human = {
        r["system"]: r["value"] for r in summary["scores"] if r["qrels_name"] == "human" and r["measure"] == "nDCG@10"
    }
    qrels = list(ir_measures.read_trec_qrels(str(SAMPLE / "qrels.txt")))
    ndcg = ir_measures.parse_measure("nDCG@10")
    for system in ("perfect", "middling", "reversed"):
        lines = [line.split() for line in runs.read_text().splitlines() if line.endswith(f" {system}")]
        scored = [ir_measures.ScoredDoc(q, d, float(score)) for q, _, d, _, score, _ in lines]
        assert human[system] == ir_measures.calc_aggregate([ndcg], qrels, scored)[ndcg]
    assert human["perfect"] == 1.0
    assert human["perfect"] > human["middling"] > human["reversed"]
    assert summary["conventions"] == {
        "missing_topics": "skip",
        "missing": "topics the run lacks are left out of the mean (trec_eval's default)",
        "ties": "ties broken by doc id descending for every measure (trec_eval's order)",
    }
    agreement = [(r["qrels_name"], r["measure"], r["kendall_tau"], r["tau_ap"]) for r in summary["agreement"]]
    assert agreement == [
        ("default", "P(rel=2)@3", 1.0, 1.0), ("HA", "P(rel=2)@3", -1.0, -1.0),
        ("default", "nDCG@10", 1.0, 1.0), ("HA", "nDCG@10", -1.0, -1.0),
    ]  # fmt: skip
    best = stored(judged, "select qrels_name from rank_agreement_summary where measure = 'nDCG@10' and tau_rank = 1")
    assert best == [("default",)]
    assert stored(judged, "select count(*) from system_scores") == [
        (3 * 3 * 2 * 6,)
    ]  # qrels x systems x measures x (5 topics + all)
    # the table says which conventions applied
    table = cli(capsys, judged, "evaluate", str(runs), "--collection", "sample", "--missing-topics", "zero")
    assert table.exit_code == 0, table.err
    assert table.out.splitlines()[-1] == (
        "Scores: topics the run lacks score 0 in the mean (trec_eval -c); "
        "ties broken by doc id descending for every measure (trec_eval's order)."
    )
    report = cli(capsys, judged, "report", "--output", str(tmp_path / "report"))
    assert report.exit_code == 0, report.err
    html = (tmp_path / "report" / "report.html").read_text()
    assert "<h3>sample: llm qrels from scripted</h3>" in html
    assert len(list((tmp_path / "report" / "figures").glob("systems-*.png"))) == 2  # one scatter per measure


@pytest.mark.core
def test_fill_keeps_human_labels_and_fills_the_rest():
    human = pl.DataFrame({"query_id": ["1", "1"], "doc_id": ["a", "b"], "relevance": [3, 0]})
    llm = pl.DataFrame({"query_id": ["1", "1"], "doc_id": ["b", "c"], "relevance": [2, 1], "confidence": [80.0, 70.0]})
    filled = fill_holes(human, llm)
    assert filled.rows() == [("1", "a", 3, None, "human"), ("1", "b", 0, None, "human"), ("1", "c", 1, 70.0, "llm")]


@pytest.mark.core
def test_hiding_is_stratified_seeded_and_nested():
    qrels = pl.DataFrame(
        {"query_id": [str(i % 5) for i in range(40)], "doc_id": [f"d{i}" for i in range(40)],
         "relevance": [i % 4 for i in range(40)]}
    )  # fmt: skip
    order = hide_labels(qrels, seed=3)
    at = {share: hidden_at(order, share) for share in (0.1, 0.3, 0.9)}
    assert [frame["relevance"].value_counts().sort("relevance")["count"].to_list() for frame in at.values()] == [
        [1, 1, 1, 1],
        [3, 3, 3, 3],
        [9, 9, 9, 9],
    ]
    pairs = {share: set(frame["doc_id"]) for share, frame in at.items()}
    assert pairs[0.1] < pairs[0.3] < pairs[0.9]
    assert hide_labels(qrels, seed=3).equals(order) and not hide_labels(qrels, seed=4).equals(order)


@pytest.mark.integration
def test_built_dl19_runs_score_as_ir_measures_scores_them(settings, shared_data, tmp_path, capsys, ingested):
    ingested("dl19", settings)
    out = tmp_path / "runs"
    result = cli(capsys, settings, "build-runs", "--collection", "dl19", "--output-dir", str(out))
    assert result.exit_code == 0, result.err
    files = sorted(out.glob("*.run"))
    assert len(files) == 11 and result.out.splitlines() == [str(out / f"{name}.run") for name in builtin_systems()]
    assert {len(f.read_text().splitlines()) for f in files} == {43 * 100}
    result = cli(capsys, settings, "evaluate", *map(str, files), "--collection", "dl19",
                 "--measure", "nDCG@10", "--measure", "AP@100", "--format", "json")  # fmt: skip
    assert result.exit_code == 0, result.err
    got = {(r["system"], r["measure"]): r["value"] for r in json.loads(result.out)["scores"]}
    qrels = list(ir_measures.read_trec_qrels(str(shared_data / "dl19" / "2019qrels-pass.txt")))
    measures = [ir_measures.parse_measure("nDCG@10"), ir_measures.parse_measure("AP@100")]
    for path in files:
        direct = ir_measures.calc_aggregate(measures, qrels, list(ir_measures.read_trec_run(str(path))))
        assert {m: got[(path.stem, str(m))] for m in ["nDCG@10", "AP@100"]} == {str(k): v for k, v in direct.items()}
    assert round(got[("bm25-lucene-k0.9-b0.4-stem", "nDCG@10")], 4) == 0.4533


def builtin_systems() -> list[str]:
    from tasks.evaluate.builder import CONFIGS

    return [c.system for c in CONFIGS]


def fuser_says_the_grade(request: dict) -> str:
    """The fuser answers the human grade of the passage it is shown, confidence 80."""
    content = request["messages"][-1]["content"]
    grade = next(GRADE_OF_DOC[doc] for text, doc in TEXTS.items() if f"\nPassage: {text}\n" in content)
    return json.dumps({"relevance": grade, "confidence_score": 80, "explanation": "the first judge"})


@pytest.mark.integration
def test_fuser_export_is_the_fuse_runs_labels(judged, tmp_path, capsys):
    with FakeOpenAI(fuser_says_the_grade) as server:
        fuser = ("--fuser-base-url", server.base_url, "--fuser-model", "fake-model", "--run-name", "f")
        result = cli(capsys, judged, "fuse", "--collection", "sample", "--runs", "scripted", *fuser)
        assert result.exit_code == 0, result.err
    out = tmp_path / "fuser.qrels"
    result = cli(capsys, judged, "export-qrels", "--run", "scripted", "--aggregate", "fuser", "--output", str(out))
    assert result.exit_code == 0, result.err
    assert {(q.query_id, q.doc_id, q.relevance) for q in ir_measures.read_trec_qrels(str(out))} == {
        (q, d, g) for (q, d), g in QRELS.items()
    }
    side = pl.read_csv(f"{out}.confidence.tsv", separator="\t", schema_overrides={"query_id": pl.String})
    assert set(side["confidence"]) == {80.0}
    result = cli(capsys, judged, "export-qrels", "--run", "scripted", "--aggregate", "classifier", "--output", str(out))
    assert (result.exit_code, "stores its trials' scores, not per-pair labels" in result.err) == (2, True)


def test_a_rank_past_64_bits_names_the_file_line_and_range(settings, tmp_path, capsys):
    ingest(preset="sample", settings=settings)
    run = tmp_path / "huge.run"
    run.write_text("q1 Q0 d1 1 2.0 mine\nq1 Q0 d2 99999999999999999999999 1.0 mine\n")
    result = cli(capsys, settings, "evaluate", str(run), "--collection", "sample")
    assert (result.exit_code, result.out, result.err) == (
        1,
        "",
        f"error: {run}:2: rank 99999999999999999999999 is past the 64-bit range (-2^63 .. 2^63-1)\n",
    )


@pytest.mark.parametrize(
    ("measure", "message"),
    [
        # a cutoff of 0: pytrec_eval aborts the whole process (exit 134) on it
        ("nDCG@0", "measure 'nDCG@0': the cutoff must be at least 1 (@1 is the top passage), not 0"),
        ("P@0", "measure 'P@0': the cutoff must be at least 1 (@1 is the top passage), not 0"),
        # past what pytrec_eval's C ints hold
        (
            f"nDCG@{2**31}",
            f"measure 'nDCG@{2**31}': cutoff {2**31} is past the range -2^31 .. 2^31-1 pytrec_eval takes",
        ),
    ],
)
def test_a_measure_pytrec_eval_cannot_take_is_a_usage_error(settings, tmp_path, capsys, measure, message):
    run = write_runs(tmp_path / "three.run")
    for command in (["evaluate", str(run), "--collection", "sample"], ["holes", "sample", "--run", "scripted"]):
        result = cli(capsys, settings, *command, "--measure", measure)
        assert (result.exit_code, result.out, result.err) == (2, "", f"error: {message}\n")


def test_personality_and_aggregate_together_is_a_usage_error(judged, tmp_path, capsys):
    run = write_runs(tmp_path / "three.run")
    both = ["--personality", "HA", "--aggregate", "majority"]
    for command in (
        ["evaluate", str(run), "--collection", "sample", "--qrels", "scripted"],
        ["export-qrels", "--run", "scripted", "--output", str(tmp_path / "out.qrels")],
    ):
        result = cli(capsys, judged, *command, *both)
        assert (result.exit_code, result.out, result.err) == (
            2,
            "",
            "error: --personality and --aggregate each choose whose labels: give one of them\n",
        )
    assert not (tmp_path / "out.qrels").exists()


def test_a_run_file_of_queries_the_collection_does_not_judge_is_a_usage_error(settings, tmp_path, capsys):
    ingest(preset="sample", settings=settings)
    run = tmp_path / "other.run"
    run.write_text("q-elsewhere Q0 d1 1 2.0 mine\n")
    result = cli(capsys, settings, "evaluate", str(run), "--collection", "sample")
    assert (result.exit_code, result.out, result.err) == (
        2,
        "",
        "error: no query of the run files (q-elsewhere) is judged in collection 'sample': "
        "give the --collection the runs answer\n",
    )
