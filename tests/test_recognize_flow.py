"""Issue 33: `peras personas recognize` through the real CLI and HTTP against the scripted server, on a real judge
run's with-CoT answers - the Figure 6 request as sent, every sampled answer read per dimension, traits per persona,
a rerun sends nothing, ids naming no sentence regenerated and recorded, a killed run resumed with each item once."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Any

import duckdb
import pytest

from peras.errors import CheckFailed
from peras.paths import PROJECT_ROOT
from peras.settings import Settings
from support.fake_openai import FakeOpenAI, Reply
from tasks.recognize.prompt import evidence_messages, state_messages, trait_messages
from tasks.recognize.sentences import numbered, numbered_dialogues, split_sentences
from tests.helpers import run_cli, snapshot

pytestmark = pytest.mark.integration

PERSONAS = ("default", "HN", "LN")
# What each persona's judge says, sentence by sentence (its explanation in the 'self' method's JSON).
EXPLANATIONS = {
    "very high Neuroticism": "I worry that this passage may mislead. It mentions the topic. I am anxious about it.",
    "very low Neuroticism": "The passage mentions the topic. I stay calm and relaxed about its gaps.",
}
PLAIN = "The passage mentions the topic. It gives a partial answer."
LINE = re.compile(r"^(\d+)\. the assessor: (.*)$", re.M)


PASSAGE = re.compile(r"^Passage: (.*)$", re.M)


def judge_answer(request: dict[str, Any]) -> str:
    """The 'self' method's JSON: relevance 2, confidence 80, the persona's explanation, then a number of the passage."""
    content = request["messages"][-1]["content"]
    explanation = next((text for key, text in EXPLANATIONS.items() if key in content), PLAIN)
    explanation += f" It is case {zlib.crc32(PASSAGE.search(content).group(1).encode()) % 1000}"
    return json.dumps({"relevance": 2, "confidence_score": 80, "explanation": explanation})


def cot_texts(warehouse: Path, personality: str) -> list[str]:
    """The personality's CoT answers in the documented sample order: sha256("42|query_id|doc_id")."""
    found = rows(warehouse, "select j.query_id, j.doc_id, r.raw_text from judgments j join llm_requests r "
                            f"on r.request_id = j.label_request_id where j.personality = '{personality}'")  # fmt: skip
    ranked = sorted(found, key=lambda r: hashlib.sha256(f"42|{r[0]}|{r[1]}".encode()).hexdigest())
    return [text for _, _, text in ranked]


def reading(content: str, ids: str | None = None) -> str:
    """A recognizer that reads worry as high neuroticism, calm as low, anything else as uncertain."""
    sentences = dict(LINE.findall(content))
    worried = [i for i, s in sentences.items() if "worry" in s or "anxious" in s]
    calm = [i for i, s in sentences.items() if "calm" in s]
    if worried or calm:
        level = "high" if worried else "low"
        cited = ids or ", ".join(worried or calm)
        return f"[Dialogue 1]\n- analysis: the assessor says so ({cited}).\n- level: {level}\n- utterance ids: {cited}"
    return "[Dialogue 1]\n- analysis: nothing about it.\n- level: uncertain\n- utterance ids: none"


FACETS = re.compile(r"one paragraph for each facet \((.*?)\), in that order")
DIMENSION = re.compile(r"trait level is <level> in (\w+)\.")


def trait_answer(content: str) -> str:
    """Figure 8's form: the first facet cites answer 1, the level as the readings' (neuroticism only)."""
    dimension = DIMENSION.search(content).group(1)
    first, *others = FACETS.search(content).group(1).split(", ")
    level = "uncertain"
    if dimension == "neuroticism":
        level = "high" if "worry" in content else "low" if "calm" in content else "uncertain"
    lines = [
        f"In terms of {first}, the assessor says so (1). This shows that.",
        *(f"In terms of {f}, nothing." for f in others),
    ]
    return "\n".join([*lines, f"In summary, it is judged that the assessor's trait level is {level} in {dimension}."])


def recognizer(request: dict[str, Any]) -> str:
    content = request["messages"][-1]["content"]
    if "## Role : [Master of Big Five Personality Theory]" not in content:
        return judge_answer(request)
    return trait_answer(content) if "In terms of <facet 1>" in content else reading(content)


def rows(warehouse: Path, sql: str) -> list[tuple]:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


@pytest.fixture
def judged(settings: Settings, tmp_path, monkeypatch, ingested) -> Settings:
    """The sample judged with CoT ('self' method, 4 pairs) under default, HN and LN: run 'cot'."""
    from flows.judge import judge

    monkeypatch.setenv("PERAS_ENDPOINT_SLOTS_DIR", str(tmp_path / "slots"))
    ingested("sample", settings)

    def make(template: Settings) -> None:
        with FakeOpenAI(judge_answer) as server:
            asking = template.model_copy(update={"base_urls": [server.base_url], "model": "fake-model"})
            judge("sample", personalities=list(PERSONAS), cot=[True], confidence_methods=["self"], run_name="cot",
                  limit_pairs=4, settings=asking)  # fmt: skip

    ingested.made("judged sample cot self", settings, make)
    return settings


def recognize_cli(capsys, settings: Settings, server: FakeOpenAI, *args: str):
    return run_cli(
        capsys, "personas", "recognize", "--run", "cot", "--warehouse", str(settings.warehouse),
        "--base-url", server.base_url, "--model", "fake-model", "--dimension", "neuroticism", *args,
    )  # fmt: skip


def test_every_sampled_answer_is_read_with_figure_6_then_a_rerun_sends_nothing(judged, capsys, tmp_path):
    with FakeOpenAI(recognizer) as server:
        result = recognize_cli(capsys, judged, server, "--sample", "3")
        assert result.exit_code == 0, result.err
        # the check set's 3 neuroticism texts, 3 personas x 3 answers x 1 dimension, then 3 trait judgments
        assert len(server.chat_requests) == 15
        sent = [r.body["messages"] for r in server.chat_requests]
        # the Figure 6 request of default's first sampled answer, and HN's trait request over its three
        default_first = cot_texts(judged.warehouse, "default")[0]
        assert state_messages("neuroticism", numbered(split_sentences(default_first))) in sent
        assert trait_messages("neuroticism", numbered_dialogues(cot_texts(judged.warehouse, "HN")[:3])) in sent
        params = {(r.body["temperature"], r.body["top_p"], r.body["seed"]) for r in server.chat_requests}
        assert params == {(0.0, 1.0, 42)}
        again = recognize_cli(capsys, judged, server, "--sample", "3")
        assert again.exit_code == 0, again.err
        assert len(server.chat_requests) == 15  # nothing sent
    assert "cot-recognize-fake-model: 12 readings (12 new; 12 requests sent, 0 reused), 0 failed" in result.out
    # the check set first: 'anxious' (sentence 2 of 1-2) and 'calmly' (3 of 2-3) cited, the neutral text uncertain
    assert result.out.startswith(
        "Recognizer on the check set (written for PERAS): 3 of 3 levels right (accuracy 1.00), "
        "evidence-id F1 0.67 over 2 texts with evidence.\n"
    )
    assert "(0 new; 0 requests sent, 0 reused)" in again.out
    assert "Pole recognised for 2 of 2 personas (accuracy 1.00)." in result.out
    shares = rows(judged.warehouse, "select personality, n_read, share_high, share_low, share_uncertain, verdict "
                                    "from recognize_shares order by personality")  # fmt: skip
    assert shares == [("HN", 3, 1.0, 0.0, 0.0, "high"), ("LN", 3, 0.0, 1.0, 0.0, "low"),
                      ("default", 3, 0.0, 0.0, 1.0, "uncertain")]  # fmt: skip
    evidence = rows(judged.warehouse, "select distinct personality, utterance_ids, evidence from recognize_evidence "
                                      "order by personality")  # fmt: skip
    assert evidence == [
        ("HN", [1, 3], ['{"relevance": 2, "confidence_score": 80, "explanation": "I worry that this passage may '
                        'mislead.', 'I am anxious about it.']),
        ("LN", [2], ["I stay calm and relaxed about its gaps."]),
    ]  # fmt: skip
    traits = rows(judged.warehouse, "select personality, level, answer_ids, len(shown) from recognize_trait_levels "
                                    "order by personality")  # fmt: skip
    assert traits == [("HN", "high", [1], 3), ("LN", "low", [1], 3), ("default", "uncertain", [1], 3)]
    assert rows(judged.warehouse, "select status from recognize_runs union all select status from "
                                  "recognize_trait_runs") == [("published",), ("published",)]  # fmt: skip

    # the report's section: the check set first, each persona's own dimension, the quoted evidence
    report = run_cli(capsys, "report", "--warehouse", str(judged.warehouse), "--output", str(tmp_path))
    assert report.exit_code == 0, report.err
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    part = html[html.index('<section id="recognize">') :]
    part = part[: part.index("</section>")]
    assert "Check set: 3 of 3 levels right (accuracy 1.00), evidence-id F1 0.67." in part
    assert "Pole recognised for 2 of 2 personas (accuracy 1.00)" in part
    assert (
        "<tr><td>HN</td><td>neuroticism</td><td>high</td><td>1.00</td><td>0.00</td><td>0.00</td><td>high</td>" in part
    )
    assert "&ldquo;I am anxious about it.&rdquo;" in part and "Control:" not in part


def test_ids_naming_no_sentence_are_regenerated_then_recorded(judged, capsys):
    def out_of_range(request: dict[str, Any]) -> str:
        content = request["messages"][-1]["content"]
        if "worry" in content and "It is case" in content:
            # HN's answers cite sentence 9 of 4 at first; regeneration 2 (seed 42 + 2000) reads
            return reading(content, "2" if request["seed"] == 2042 else "9")
        if "calm" in content and "It is case" in content:
            return reading(content, "7")  # LN's never cite a sentence of the answer
        return recognizer(request)

    with FakeOpenAI(out_of_range) as server:
        result = recognize_cli(capsys, judged, server, "--sample", "2", "--run-name", "ids")
    assert result.exit_code == 1
    assert "recognize gate failed" in result.err and "LN" in result.err
    stored = rows(judged.warehouse, "select personality, status, reason, utterance_ids from recognize_states "
                                    "order by personality, query_id")  # fmt: skip
    assert stored[:2] == [("HN", "ok", None, [2])] * 2
    assert stored[2:4] == [("LN", "parse_failure", "utterance ids [7] name no sentence (the answer has 3)", None)] * 2
    attempts = rows(judged.warehouse, "select parse_status, attempts, json_array_length(attempt_texts) "
                                      "from llm_requests where purpose = 'recognize_state' order by all")  # fmt: skip
    # default's 2 and the check set's 3 read at once, HN's at the second regeneration, LN's never
    assert attempts == [("ok", 1, 1)] * 5 + [("ok", 3, 3)] * 2 + [("parse_failure", 5, 5)] * 2
    assert rows(judged.warehouse, "select status from recognize_runs") == [("failed_check",)]


def test_a_killed_run_resumes_and_completes_each_item_once(judged, capsys):
    with FakeOpenAI(lambda r: Reply(recognizer(r), delay_s=0.1)) as server:
        env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT), "PERAS_CONCURRENCY": "1"}
        command = [
            sys.executable, "-c", "from cli.main import main; main()", "personas", "recognize", "--run", "cot",
            "--warehouse", str(judged.warehouse), "--base-url", server.base_url, "--model", "fake-model",
            "--sample", "4",
        ]  # fmt: skip
        child = subprocess.Popen(command, env=env, cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 180
        while len(server.chat_requests) < 20 and time.monotonic() < deadline and child.poll() is None:
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        before = [json.dumps(r.body["messages"]) for r in server.chat_requests]
        assert len(before) >= 20
        server.reset()
        result = run_cli(capsys, *command[3:])
        after = [json.dumps(r.body["messages"]) for r in server.chat_requests]
    assert result.exit_code == 0, result.err
    # 13 check texts, 3 personas x 4 answers x 5 dimensions, 15 traits; what the killed run journaled is not asked
    # again (concurrency 1: at most the request in flight at the kill)
    assert len(after) == len(set(after)) and len(set(before) & set(after)) <= 1
    assert len(set(before) | set(after)) == 13 + 60 + 15
    assert rows(judged.warehouse, "select count(*), count(distinct (personality, query_id, doc_id, dimension)) "
                                  "from recognize_states") == [(73, 73)]  # fmt: skip
    assert rows(judged.warehouse, "select status from recognize_runs") == [("published",)]


def test_an_unknown_judge_run_is_one_clear_line(judged, capsys):
    result = run_cli(capsys, "personas", "recognize", "--run", "nope", "--warehouse", str(judged.warehouse))
    assert (result.exit_code, result.err) == (
        2,
        "error: no judge run 'nope' (peras runs list --kind judge shows them)\n",
    )


def test_a_judge_run_its_gate_refused_is_not_read(judged, capsys):
    """Issue 48: a judge run that failed its gate (or failed, or is still running) is unpublished: recognize refuses
    it in one line, as evaluate and export-qrels do, and stores nothing."""
    from flows.judge import judge

    with FakeOpenAI(lambda request: "no idea", models=["unreadable-model"]) as server:  # the gate refuses it
        # another model than run 'cot''s: its stored answers are not reused
        asking = judged.model_copy(update={"base_urls": [server.base_url], "model": "unreadable-model"})
        with pytest.raises(CheckFailed, match="judge gate failed"):
            judge("sample", personalities=["HN"], cot=[True], confidence_methods=["self"], run_name="cot-refused",
                  limit_pairs=2, settings=asking)  # fmt: skip
    assert rows(judged.warehouse, "select status from judge_runs where run_name = 'cot-refused'") == [("failed_check",)]
    for status in ("failed_check", "failed", "running"):
        with duckdb.connect(str(judged.warehouse)) as con:
            con.execute("update judge_runs set status = ? where run_name = 'cot-refused'", [status])
        before = snapshot(judged.warehouse)
        with FakeOpenAI(recognizer) as server:
            result = run_cli(capsys, "personas", "recognize", "--run", "cot-refused", "--warehouse",
                             str(judged.warehouse), "--base-url", server.base_url, "--model", "fake-model")  # fmt: skip
            assert server.chat_requests == []
        assert (result.exit_code, result.out, result.err) == (
            2,
            "",
            f"error: judge run 'cot-refused' is {status}, not published: finish it with `peras judge` first\n",
        )
        assert snapshot(judged.warehouse) == before


SHARED = re.compile(r"## Ground-truth evidence:\n(.*)\n## Predicted evidence:\n(.*)\nAnswer with one line", re.S)


def evidence_judge(request: dict[str, Any]) -> str:
    """Scores 1 + 2 per predicted line that is also a line of the ground truth, at most 5."""
    reference, prediction = SHARED.search(request["messages"][-1]["content"]).groups()
    shared = set(reference.splitlines()) & set(prediction.splitlines())
    return f"Score: {min(5, 1 + 2 * len(shared))}"


def test_an_llm_judge_scores_the_check_set_evidence_1_to_5(judged, capsys):
    with FakeOpenAI(recognizer) as server, FakeOpenAI(evidence_judge, models=["judge-model"]) as judge_server:
        scored = ["--evidence-judge-model", "judge-model", "--evidence-judge-base-url", judge_server.base_url]
        result = recognize_cli(capsys, judged, server, "--sample", "1", *scored)
        assert result.exit_code == 0, result.err
        again = recognize_cli(capsys, judged, server, "--sample", "1", *scored)
        assert again.exit_code == 0, again.err
    # the three neuroticism check texts the recognizer read, each once (the rerun sent nothing), to the judge only
    sent = [(r.body["model"], r.body["messages"]) for r in judge_server.chat_requests]
    assert len(sent) == 3 and not any("Ground-truth evidence" in str(r.body) for r in server.chat_requests)
    # 'anxious' (sentence 2 of the expected 1-2) and 'calmly' (3 of 2-3) cited; the neutral text read uncertain
    high = evidence_messages(
        "neuroticism",
        "- I am so worried that I will get this label wrong and it makes me tense.\n"
        "- What if the passage is outdated, I keep doubting myself and feel anxious about it.",
        "- the assessor says so (2).\n- What if the passage is outdated, I keep doubting myself and feel anxious "
        "about it.",
    )
    neutral = evidence_messages(
        "neuroticism", "- none: no sentence shows this dimension (level uncertain)", "- nothing about it."
    )
    assert ("judge-model", high) in sent and ("judge-model", neutral) in sent
    assert rows(judged.warehouse, "select text_id, score, status from recognize_evidence_scores order by 1") == [
        ("neuroticism-high", 3, "ok"), ("neuroticism-low", 3, "ok"), ("neutral-1", 1, "ok"),
    ]  # fmt: skip
    quality = rows(judged.warehouse, "select run_name, evidence_run_name, judge_model, n_texts, n_scored, "
                                     "round(mean_score, 4), round(sd_score, 4), min_score, max_score "
                                     "from recognize_evidence_quality")  # fmt: skip
    # mean (3 + 3 + 1) / 3; sample SD sqrt(((2/3)^2 * 2 + (4/3)^2) / 2)
    assert quality == [("cot-recognize-fake-model", "cot-evidence-judge-model", "judge-model", 3, 3, 2.3333, 1.1547,
                        1, 3)]  # fmt: skip
    line = ("Its evidence scored 1-5 by judge-model against the check set's: mean 2.33 over 3 of 3 texts "
            "(cot-evidence-judge-model).\n")  # fmt: skip
    assert line in result.out and line in again.out
