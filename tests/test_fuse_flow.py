"""Issue 20: `peras fuse` through the real CLI and HTTP against the scripted server - eleven judges (the
personalities of a CoT self-confidence run on the sample) shown to the fuser shuffled and anonymised, unreadable
fuser answers regenerated then recorded and never scored, a rerun sends nothing, and the comparison table against
an independent computation."""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import datetime
from itertools import product
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from sklearn.metrics import cohen_kappa_score, f1_score

from peras.paths import PROJECT_ROOT
from peras.prompting import CANONICAL_ORDER as PERSONALITY_ORDER
from peras.warehouse import open_migrated
from support.fake_openai import FakeOpenAI
from tests.helpers import run_cli
from tests.test_pairwise_flow import rows

pytestmark = pytest.mark.integration

SAMPLE = PROJECT_ROOT / "peras" / "data" / "sample"
PASSAGE = re.compile(r"\nPassage: (.*?)\n(?:Split this problem|- \*\*JSON Outputs\*\*:)", re.S)
OUTPUT = re.compile(r"^  - JSON Output (\d+): (.*)$", re.M)
FUSER = "You are a helpful assistant tasked with combining multiple model responses"


def sample_texts() -> tuple[dict[str, int], dict[str, str]]:
    """passage text -> its grade, and passage text -> doc_id, in the sample's qrels."""
    texts = {}
    for line in (SAMPLE / "passages.jsonl").read_text().splitlines():
        record = json.loads(line)
        texts[record["docid"]] = record["doc"]
    grades = {line.split()[2]: int(line.split()[3]) for line in (SAMPLE / "qrels.txt").read_text().splitlines()}
    return {texts[d]: g for d, g in grades.items()}, {texts[d]: d for d in grades}


GRADES, DOC_IDS = sample_texts()
NEVER_READ = sorted(DOC_IDS.values())[0]  # the fuser never answers this pair readably


SHIFTS = (0, 0, 1, -1, 0, 1, 0, -1, 0, 0, 1)  # per personality in canonical order: a judge off by one or not


def judge_rows(pairs: list[tuple[str, str, int]]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The eleven personalities' CoT self-confidence judgments of the sample and their label requests."""
    judgments, requests = [], []
    for (query_id, doc_id, grade), (i, code) in product(pairs, enumerate(PERSONALITY_ORDER)):
        # grade 1: seven of the eleven say 2, so the majority vote is wrong there
        label = 2 if grade == 1 and i < 7 else min(3, max(0, grade + SHIFTS[i]))
        request_id = f"req-{code}-{query_id}-{doc_id}"
        judgments.append(
            {"run_id": "run-judges", "query_id": query_id, "doc_id": doc_id, "personality": code, "cot": True,
             "confidence_method": "self", "label": label, "confidence": 90.0 if label == grade else 60.0,
             "status": "ok", "label_request_id": request_id, "judged_at": datetime(2026, 1, 1)}
        )  # fmt: skip
        requests.append(
            {"request_id": request_id, "model": "judge-model", "backend": "test", "prompt_hash": request_id,
             "purpose": "label", "params": "{}", "messages": "[]", "raw_text": f"  {code} says {label}.  ",
             "attempts": 1, "attempt_texts": "[]", "parsed_value": float(label), "parse_status": "ok",
             "created_at": datetime(2026, 1, 1)}
        )  # fmt: skip
    return pl.DataFrame(judgments), pl.DataFrame(requests)


def fuser_answer(request: dict) -> str:
    """The truth, but 2 for grade 3 (confidence 70); unreadable on its first try for grade 3, always for
    NEVER_READ."""
    passage = PASSAGE.search(request["messages"][-1]["content"]).group(1)
    grade = GRADES[passage]
    if DOC_IDS[passage] == NEVER_READ or (grade == 3 and request.get("seed") == 0):
        return "The relevance is probably 2."
    said = {"relevance": min(grade, 2), "confidence_score": 70 if grade == 3 else 85, "explanation": "most agree"}
    return json.dumps(said)


@pytest.fixture
def judged(settings, tmp_path, monkeypatch, ingested):
    """The shipped sample (5 topics, 8 judged passages each, 2 per grade) and a judge run 'judges' of the eleven
    personalities on it (CoT, self-confidence), written straight into the warehouse."""
    monkeypatch.setenv("PERAS_ENDPOINT_SLOTS_DIR", str(tmp_path / "slots"))
    ingested("sample", settings)
    with open_migrated(settings.warehouse) as con:
        pairs = con.execute("select query_id, doc_id, relevance from qrels where collection_id = 'sample'").fetchall()
        judgments, requests = judge_rows(pairs)
        run = {"run_id": "run-judges", "run_name": "judges", "source": "llm", "task_type": "pointwise",
               "collection_id": "sample", "model": "judge-model", "backend": "test", "params": "{}",
               "created_at": datetime(2026, 1, 1)}  # fmt: skip
        for table, frame in (("judge_runs", pl.DataFrame([run])), ("judgments", judgments), ("llm_requests", requests)):
            con.register("frame", frame.to_arrow())
            con.execute(f"insert into {table} by name select * from frame")  # noqa: S608 - fixed table names
            con.unregister("frame")
    return settings


def test_fuse_end_to_end(judged, capsys, tmp_path):
    warehouse = str(judged.warehouse)
    with FakeOpenAI(fuser_answer) as server:
        args = ("fuse", "--collection", "sample", "--runs", "judges", "--warehouse", warehouse)
        fuser = ("--fuser-base-url", server.base_url, "--fuser-model", "fake-model", "--run-name", "f")
        result = run_cli(capsys, *args, *fuser)
        assert result.exit_code == 0, result.err
        asked = [r.body for r in server.chat_requests]
        again = run_cli(capsys, *args, *fuser)
        assert again.exit_code == 0, again.err
        assert len(server.chat_requests) == len(asked)  # a rerun sends nothing

    # 40 pairs; 8 grade-3 pairs regenerated once (seed 1000); NEVER_READ asked 5 times (seeds 0..4000)
    grade3 = sum(1 for d in DOC_IDS.values() if d != NEVER_READ and GRADES[_text(d)] == 3)
    seeds = Counter(b["seed"] for b in asked)
    assert seeds == {0: 40, 1000: grade3 + 1, 2000: 1, 3000: 1, 4000: 1}
    assert all(b["temperature"] in (0, 0.7) for b in asked)
    sent = f"({len(asked)} requests sent, 0 reused), 1 failed"
    assert f"f: 11 judges, 40 pairs voted on; fuser fake-model asked 40 pairs {sent}" in result.out

    # every prompt shows the eleven judges as JSON outputs 1..11, anonymised, in the recorded shuffled order
    stored = {
        (q, d): order.split(",")
        for q, d, order in rows(judged.warehouse, "select query_id, doc_id, judge_order from fuse_answers")
    }
    said = {
        (q, d, p): (label, conf, expl)
        for q, d, p, label, conf, expl in rows(
            judged.warehouse,
            "select j.query_id, j.doc_id, j.personality, j.label, j.confidence, r.raw_text from judgments j "
            "join llm_requests r on r.request_id = j.label_request_id",
        )
    }
    assert said[next(iter(said))][2].startswith("  ")  # the explanation is shown stripped
    orders = set()
    for body in asked:
        content = body["messages"][0]["content"]
        doc_id = DOC_IDS[PASSAGE.search(content).group(1)]
        key = next(k for k in stored if k[1] == doc_id)
        outputs = OUTPUT.findall(content)
        assert [int(i) for i, _ in outputs] == list(range(1, 12))
        shown = [json.loads(o) for _, o in outputs]
        assert all(set(s) == {"relevance", "confidence_score", "explanation"} for s in shown)
        expected = [said[(*key, p)] for p in stored[key]]
        assert [(s["relevance"], s["confidence_score"], s["explanation"]) for s in shown] == [
            (label, int(conf), expl.strip()) for label, conf, expl in expected
        ]
        orders.add(tuple(stored[key]))
    assert len(orders) > 30  # shuffled per pair

    failures = rows(judged.warehouse, "select doc_id, status, reason from fuse_answers where status != 'ok'")
    assert failures == [(NEVER_READ, "parse_failure", "no JSON object")]
    assert rows(judged.warehouse, "select status from fuse_runs") == [("published",)]
    check_table(judged.warehouse)
    assert rows(
        judged.warehouse, "select n_fused, n_disagree, n_fuser_right, n_majority_right from fuse_disagreement"
    ) == [
        (39, 19, 10, 9)  # grade 1: seven of eleven judges say 2, the fuser 1; grade 3: the fuser says 2
    ]

    report = run_cli(capsys, "report", "--warehouse", warehouse, "--output", str(tmp_path / "report"))
    assert report.exit_code == 0, report.err
    html = (tmp_path / "report" / "report.html").read_text()
    start = html.index('<section id="fuse">')
    section = html[start : html.index("</section>", start)]
    assert "<code>f</code> on sample" in section and "Fuser vs majority vote · f · fake-model" in section
    assert section.count("<tr>") == 1 + 1 + 4 + 1 + 1  # header, fuser, four baselines, best single judge, default


def _text(doc_id: str) -> str:
    return next(t for t, d in DOC_IDS.items() if d == doc_id)


def check_table(warehouse: Path) -> None:
    """fuse_comparison against NumPy/scikit-learn on the stored labels."""
    got = {
        (name, metric): (value, delta)
        for name, metric, value, delta in rows(warehouse, "select row_name, metric, value, delta from fuse_comparison")
    }
    truth = dict(
        ((q, d), r) for q, d, r in rows(warehouse, "select distinct query_id, doc_id, relevance from fuse_votes")
    )
    fuser = rows(warehouse, "select query_id, doc_id, label, confidence from fuse_answers where status = 'ok'")
    majority = rows(
        warehouse, "select query_id, doc_id, label, confidence from fuse_votes where method = 'vote_majority'"
    )
    default = rows(
        warehouse,
        "select query_id, doc_id, label, confidence from judgments where personality = 'default'",
    )
    expected = {
        "fuser": measures(fuser, truth),
        "vote_majority": measures(majority, truth),
        "default": measures(default, truth),
    }
    for name, values in expected.items():
        for metric, value in values.items():
            assert got[(name, metric)][0] == pytest.approx(value, abs=1e-12), (name, metric)
            if name != "default":
                assert got[(name, metric)][1] == pytest.approx(value - expected["default"][metric], abs=1e-12)


def measures(answers: list[tuple], truth: dict) -> dict[str, float]:
    y = np.array([truth[(q, d)] for q, d, _, _ in answers])
    label = np.array([a[2] for a in answers])
    p = np.array([a[3] for a in answers]) / 100
    correct = (label == y).astype(float)
    bins = np.minimum(np.floor(p * 10), 9)
    ece = sum(abs(correct[bins == b].sum() - p[bins == b].sum()) for b in np.unique(bins)) / len(y)
    ro = 1 - p[correct == 0].mean() if (correct == 0).any() else 1.0
    ru = 1 - (1 - p[correct == 1]).mean() if (correct == 1).any() else 1.0
    return {
        "accuracy": correct.mean(),
        "cohen_kappa": cohen_kappa_score(y, label, labels=[0, 1, 2, 3]),
        "qwk": cohen_kappa_score(y, label, labels=[0, 1, 2, 3], weights="quadratic"),
        "macro_f1": f1_score(y, label, labels=[0, 1, 2, 3], average="macro", zero_division=0),
        "ece": ece,
        "brier": ((p - correct) ** 2).mean(),
        "ro": ro,
        "ru": ru,
        "hmr": 2 * ro * ru / (ro + ru) if ro + ru else 0.0,
    }


def test_baselines_only_fits_120_columns_and_says_only_what_it_shows(judged, capsys):
    args = (
        "fuse",
        "--collection",
        "sample",
        "--runs",
        "judges",
        "--baselines-only",
        "--warehouse",
        str(judged.warehouse),
    )
    result = run_cli(capsys, *args)
    assert result.exit_code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0].endswith(": 11 judges, 40 pairs voted on")
    assert max(len(line) for line in lines) <= 120
    # the default judge is among the eleven: deltas against it are shown, and the best single judge
    caption = "(delta against the default judge); [the best single judge per metric]"
    assert lines[-2] == caption and result.out.count("delta against") == 1
    assert lines[-1].startswith("no fuser answers")
    csv = run_cli(capsys, *args, "--format", "csv")
    assert csv.exit_code == 0, csv.err
    header, *body = csv.out.splitlines()
    assert header == "row_name,row_kind,metric,value,delta,detail"
    assert len(body) == 6 * 13  # four baselines, the best single judge, default (no fuser) x 13 metrics
    wide = run_cli(capsys, *args, "--wide")
    assert max(len(line) for line in wide.out.splitlines()) > 120
