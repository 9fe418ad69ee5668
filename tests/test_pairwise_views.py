"""Issue 19: every pairwise view against an independent NumPy computation from what the scripted server answered,
a position-biased judge showing its bias, and the pointwise labels' implied preference beside the pairwise answer."""

from __future__ import annotations

import zlib
from collections import defaultdict

import duckdb
import numpy as np
import pytest

from support.fake_openai import FakeOpenAI, instant
from tests.helpers import run_cli
from tests.test_pairwise_flow import OUTPUT, PASSAGE, answer, pairwise_cli, shown, truthful

pytestmark = pytest.mark.integration


@pytest.fixture
def sample(settings, tmp_path, monkeypatch, ingested):
    """The shipped sample (5 topics, 8 judged passages each, 2 per grade) in a fresh warehouse."""
    monkeypatch.setenv("PERAS_ENDPOINT_SLOTS_DIR", str(tmp_path / "slots"))
    ingested("sample", settings)
    return settings


def texts_shown(content: str) -> tuple[str, str]:
    """The passage texts shown as A and B."""
    if '"selected_output"' in content:
        found = dict(OUTPUT.findall(content))
        return found["a"], found["b"]
    found = dict(PASSAGE.findall(content))
    return found["A"], found["B"]


def biased(request: dict) -> str:
    """A third of the answers choose A whatever is shown; the rest the truth, or a coin on ties where no tie is
    offered; confidences spread over the whole scale (1-100 for certainty, 0-100 for self). The draws hash what is
    shown (the prompt kind and the two passages in their order), not the prompt's wording, so rewording a prompt
    leaves the judge's answers as they were."""
    content = request["messages"][-1]["content"]
    prompt, grade_a, grade_b = shown(content)
    h = zlib.crc32("\x00".join((prompt, *texts_shown(content))).encode())
    if h % 3 == 0:
        choice = "A"
    elif grade_a == grade_b:
        choice = "C" if prompt == "tie" else "AB"[h % 2]
    else:
        choice = "A" if grade_a > grade_b else "B"
    return answer(prompt, choice, 1 + h % 100 if prompt == "certainty" else (h // 7) % 101)


def either(request: dict) -> str:
    """Pairwise requests the biased judge, label requests the scripted pointwise judge."""
    content = request["messages"][-1]["content"]
    return biased(request) if "Passage A" in content or '"selected_output"' in content else instant(request)


def records(server: FakeOpenAI) -> list[dict]:
    """What the server was asked and answered, read from the requests alone."""
    out = []
    for r in server.chat_requests:
        content = r.body["messages"][-1]["content"]
        if "Passage A" not in content and '"selected_output"' not in content:
            continue
        prompt, grade_a, grade_b = shown(content)
        text = biased(r.body)
        if prompt == "self":
            choice, confidence = ("A" if "(a)" in text else "B"), float(text.rsplit(":", 1)[1].rstrip("}"))
        else:
            choice = text[0]
            confidence = float(text.rsplit("[[", 1)[1].rstrip("]")) if prompt == "certainty" else None
        truth = "A" if grade_a > grade_b else "B" if grade_a < grade_b else "C"
        text_a, text_b = texts_shown(content)
        chosen = {"A": text_a, "B": text_b}.get(choice, "tie")
        out.append({
            "prompt": prompt, "truth": truth, "choice": choice, "confidence": confidence,
            "pair": frozenset((text_a, text_b)), "chosen": chosen, "texts": (text_a, text_b),
            "grades": (grade_a, grade_b),
        })  # fmt: skip
    return out


def query(warehouse, sql: str) -> list[tuple]:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def expected_accuracy(rows: list[dict]) -> dict[str, float]:
    truth = np.array([r["truth"] for r in rows])
    choice = np.array([r["choice"] for r in rows])
    apart = truth != "C"
    pairs = defaultdict(set)
    for r in rows:
        pairs[r["pair"]].add(r["chosen"])
    conf = np.array([np.nan if r["confidence"] is None else r["confidence"] for r in rows])
    high, low = apart & (conf >= 80), apart & (conf < 80)
    return {
        "accuracy_no_ties": np.mean(choice[apart] == truth[apart]),
        "accuracy_ties": np.mean(choice == truth),
        "share_a": np.mean(choice == "A"),
        "consistency": np.mean([len(chosen) == 1 for chosen in pairs.values()]),
        "n_high": high.sum(),
        "accuracy_high": np.mean(choice[high] == truth[high]) if high.any() else None,
        "n_low": low.sum(),
        "accuracy_low": np.mean(choice[low] == truth[low]) if low.any() else None,
    }


def expected_calibration(rows: list[dict]) -> dict[str, float]:
    rows = [r for r in rows if r["truth"] != "C"]
    p = np.array([r["confidence"] for r in rows]) / 100
    correct = np.array([r["choice"] == r["truth"] for r in rows], dtype=float)
    bins = np.minimum(np.floor(p * 10), 9)
    ece = sum(abs(correct[bins == b].sum() - p[bins == b].sum()) for b in np.unique(bins)) / len(p)
    high, low = p >= 0.9, p <= 0.1

    def tail(mask, hits):
        if not mask.any():
            return 0.0
        return (np.exp(hits[mask].mean() - 0.5) - 1) * 100 * mask.mean() / 2

    return {
        "ece": ece,
        "brier": np.mean((p - correct) ** 2),
        "th_score": tail(high, correct) + tail(low, 1 - correct),
    }


def test_views_match_numpy_and_a_position_bias_shows(sample, capsys):
    with FakeOpenAI(either) as server:
        # the three one-request prompts (LogP and MP in the views: tests/test_pairwise_flow.py)
        prompts = ("--prompt", "certainty", "--prompt", "tie", "--prompt", "self")
        judged = pairwise_cli(
            capsys, sample.warehouse, server, *prompts, "--personality", "default", "--pairs-per-topic", "12"
        )
        assert judged.exit_code == 0, judged.err
        rows = records(server)
    assert len(rows) == 5 * 12 * 2 * 3
    measured = query(
        sample.warehouse,
        "select prompt, accuracy_no_ties, accuracy_ties, share_a, consistency, n_high, accuracy_high, n_low, "
        "accuracy_low, baseline_no_ties, baseline_ties, n_read from pairwise_accuracy order by prompt",
    )
    names = ["accuracy_no_ties", "accuracy_ties", "share_a", "consistency", "n_high", "accuracy_high", "n_low",
             "accuracy_low"]  # fmt: skip
    for prompt, *values, base_no_ties, base_ties, n_read in measured:
        expected = expected_accuracy([r for r in rows if r["prompt"] == prompt])
        assert n_read == 120 and base_no_ties == 0.5 and base_ties == pytest.approx(1 / 3)
        for name, value in zip(names, values, strict=True):
            assert value == pytest.approx(expected[name], abs=1e-12), (prompt, name)
    # The bias shows: far more A choices than the unbiased 0.5, and orders that disagree.
    share_a = {prompt: values[2] for prompt, *values in measured}
    assert all(share >= 0.55 for share in share_a.values()), share_a  # about 1/3 + 2/3 x 1/2, ties aside
    assert all(values[3] < 0.9 for _, *values in measured)

    calibration = query(
        sample.warehouse,
        "select confidence_method, ece, brier, th_score, n_scored_confidence from pairwise_calibration order by 1",
    )
    assert [c[0] for c in calibration] == ["certainty", "self"]
    for prompt, ece, brier, th_score, n in calibration:
        prompt_rows = [r for r in rows if r["prompt"] == prompt]
        expected = expected_calibration(prompt_rows)
        assert n == sum(r["truth"] != "C" for r in prompt_rows)
        assert ece == pytest.approx(expected["ece"], abs=1e-12)
        assert brier == pytest.approx(expected["brier"], abs=1e-12)
        assert th_score == pytest.approx(expected["th_score"], abs=1e-12)

    histogram = query(
        sample.warehouse,
        "select certainty_range, prompt, bin_low, n_correct, n_wrong from pairwise_certainty_histogram order by all",
    )
    expected_histogram = defaultdict(lambda: [0, 0])
    for r in rows:
        if r["truth"] != "C" and r["confidence"] is not None:
            correct = 0 if r["choice"] == r["truth"] else 1
            expected_histogram[("all", r["prompt"], int(10 * min(r["confidence"] // 10, 9)))][correct] += 1
            # the paper's Figure 2: certainties outside 40-90 moved to its ends
            expected_histogram[("40-90", r["prompt"], int(10 * (min(max(r["confidence"], 40), 90) // 10)))][
                correct
            ] += 1
    assert histogram == sorted((*key, *counts) for key, counts in expected_histogram.items())
    assert {b for (r, _, b) in expected_histogram if r == "40-90"} <= {40, 50, 60, 70, 80, 90}


def test_a_position_free_judge_is_consistent_and_balanced(sample, capsys):
    with FakeOpenAI(truthful) as server:
        result = pairwise_cli(
            capsys, sample.warehouse, server, "--prompt", "tie", "--personality", "default", "--pairs-per-topic", "8"
        )
    assert result.exit_code == 0, result.err
    assert query(
        sample.warehouse, "select share_a, consistency, accuracy_ties, accuracy_no_ties from pairwise_accuracy"
    ) == [(0.375, 1.0, 1.0, 1.0)]  # a quarter of the pairs are ties, answered C; of the others half show A first


def test_pointwise_labels_beside_the_pairwise_answer(sample, capsys):
    with FakeOpenAI(either) as server:
        judged = run_cli(
            capsys, "judge", "sample", "--warehouse", str(sample.warehouse), "--base-url", server.base_url,
            "--model", "fake-model", "--personality", "default", "--cot", "without",
        )  # fmt: skip
        assert judged.exit_code == 0, judged.err
        result = pairwise_cli(
            capsys, sample.warehouse, server, "--prompt", "tie", "--personality", "default", "--pairs-per-topic", "6"
        )
        assert result.exit_code == 0, result.err
        rows = records(server)
    labels = dict(
        query(
            sample.warehouse,
            "select p.text, j.label from judgments as j "
            "join passages as p on p.collection_id = 'sample' and p.doc_id = j.doc_id where j.label is not null",
        )
    )
    agree, pointwise_right, pairwise_right = [], [], []
    for r in rows:
        text_a, text_b = r["texts"]
        la, lb = labels[text_a], labels[text_b]
        pointwise = text_a if la > lb else text_b if lb > la else "tie"
        ga, gb = r["grades"]
        better = text_a if ga > gb else text_b if gb > ga else "tie"
        agree.append(pointwise == r["chosen"])
        pointwise_right.append(pointwise == better)
        pairwise_right.append(r["chosen"] == better)
    [(n, agreement, pointwise_accuracy, pairwise_accuracy)] = query(
        sample.warehouse,
        "select n_answers, agreement, pointwise_accuracy, pairwise_accuracy from pairwise_vs_pointwise_summary",
    )
    assert n == len(rows) == 60
    assert agreement == pytest.approx(np.mean(agree), abs=1e-12)
    assert pointwise_accuracy == pytest.approx(np.mean(pointwise_right), abs=1e-12)
    assert pairwise_accuracy == pytest.approx(np.mean(pairwise_right), abs=1e-12)

    # The report's pairwise section shows the measures.
    out = sample.warehouse.parent / "report"
    report = run_cli(capsys, "report", "--warehouse", str(sample.warehouse), "--output", str(out))
    assert report.exit_code == 0, report.err
    html = (out / "report.html").read_text()
    section = html[html.index('<section id="pairwise">') : html.index('<section id="personas">')]
    for view in ("pairwise_accuracy", "pairwise_certainty_histogram", "pairwise_vs_pointwise_summary"):
        assert f"<code>{view}</code>" in section
    assert "no pairwise runs yet" not in section
