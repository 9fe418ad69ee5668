"""Issue 19: `peras pairwise` through the real CLI and HTTP against the scripted server - both orders asked, the
study's sampling, failures regenerated, a rerun sends nothing, a run keeps its parameters."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import duckdb
import pytest

from peras.paths import PROJECT_ROOT
from support.fake_openai import FakeOpenAI
from tests.helpers import run_cli

pytestmark = pytest.mark.integration

SAMPLE = PROJECT_ROOT / "peras" / "data" / "sample"
PASSAGE = re.compile(r"\[The Start of Passage ([AB])\]\n(.*?)\n\[The End of Passage \1\]", re.S)
OUTPUT = re.compile(r"# Output \(([ab])\):\n(.*?)\n(?=# Output|Your response)", re.S)


def sample_grades() -> dict[str, int]:
    """passage text -> its grade in the sample's qrels."""
    texts = {}
    for line in (SAMPLE / "passages.jsonl").read_text().splitlines():
        record = json.loads(line)
        texts[record["docid"]] = record["doc"]
    grades = {line.split()[2]: int(line.split()[3]) for line in (SAMPLE / "qrels.txt").read_text().splitlines()}
    return {texts[doc_id]: grade for doc_id, grade in grades.items()}


GRADES = sample_grades()


def shown(content: str) -> tuple[str, int, int]:
    """(prompt, grade of passage A, grade of passage B) of a pairwise request."""
    if '"selected_output"' in content:
        found = dict(OUTPUT.findall(content))
        return "self", GRADES[found["a"]], GRADES[found["b"]]
    found = dict(PASSAGE.findall(content))
    return ("tie" if "[[C]]" in content else "certainty"), GRADES[found["A"]], GRADES[found["B"]]


def answer(prompt: str, choice: str, confidence: int) -> str:
    """The answer a model continuing the prompt would write."""
    if prompt == "self":
        return json.dumps({"selected_output": f"Output ({choice.lower()})", "confidence_score": confidence})
    return f"{choice}]]" if prompt == "tie" else f"{choice}]] I am sure: [[{confidence}]]"


def truthful(request: dict) -> str:
    """The more relevant passage (a tie when equal, or A where no tie is offered), certainty 90 (60 on ties)."""
    prompt, grade_a, grade_b = shown(request["messages"][-1]["content"])
    if grade_a == grade_b:
        return answer(prompt, "C" if prompt == "tie" else "A", 60)
    return answer(prompt, "A" if grade_a > grade_b else "B", 90)


@pytest.fixture
def sample(settings, tmp_path, monkeypatch, ingested):
    """The shipped sample (5 topics, 8 judged passages each, 2 per grade) in a fresh warehouse."""
    monkeypatch.setenv("PERAS_ENDPOINT_SLOTS_DIR", str(tmp_path / "slots"))
    ingested("sample", settings)
    return settings


def pairwise_cli(capsys, warehouse: Path, server: FakeOpenAI, *args: str):
    return run_cli(
        capsys, "pairwise", "sample", "--warehouse", str(warehouse), "--base-url", server.base_url,
        "--model", "fake-model", *args,
    )  # fmt: skip


def rows(warehouse: Path, sql: str) -> list[tuple]:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_every_pair_in_both_orders_every_prompt_then_a_rerun_sends_nothing(sample, capsys):
    with FakeOpenAI(truthful) as server:
        args = ("--prompt", "all", "--personality", "default", "--personality", "HA", "--pairs-per-topic", "4")
        result = pairwise_cli(capsys, sample.warehouse, server, *args)
        assert result.exit_code == 0, result.err
        # 5 topics x 4 pairs x 2 orders x 3 prompts x 2 personalities
        assert len(server.chat_requests) == 240
        assert "20 pairs, 240 answers (240 new; 240 requests sent, 0 reused), 0 failed" in result.out
        bodies = [r.body for r in server.chat_requests]
        sampling = Counter(
            (shown(b["messages"][0]["content"])[0], b["temperature"], b.get("top_p"), b.get("seed")) for b in bodies
        )
        assert sampling == {("certainty", 0.7, 0.95, 0): 80, ("tie", 0.7, 0.95, 0): 80, ("self", 0, 1, 0): 80}
        personality = rows(sample.warehouse, "select instruction from personalities where personality = 'HA'")[0][0]
        assert sum(b["messages"][0]["content"].startswith(personality + "\n\n") for b in bodies) == 120

        again = pairwise_cli(capsys, sample.warehouse, server, *args)
        assert again.exit_code == 0, again.err
        assert len(server.chat_requests) == 240  # nothing sent
        assert "(0 new; 0 requests sent, 0 reused)" in again.out

    stored = rows(
        sample.warehouse,
        "select query_id, doc_1, doc_2, personality, prompt, list(position order by position), count(*) "
        "from pairwise_answers group by all",
    )
    assert len(stored) == 5 * 4 * 3 * 2 and all(r[5] == ["AB", "BA"] for r in stored)
    strata = rows(sample.warehouse, "select distinct abs(relevance_1 - relevance_2) from pairwise_answers")
    assert sorted(strata) == [(0,), (1,), (2,), (3,)]
    assert rows(sample.warehouse, "select status, count(*) from pairwise_runs group by all") == [("published", 1)]


def test_unreadable_answers_are_regenerated_with_new_seeds_then_recorded(sample, capsys):
    def stubborn(request: dict) -> str:
        # Passage pairs whose A is graded 0 never get a readable answer; the rest the truth.
        prompt, grade_a, _ = shown(request["messages"][-1]["content"])
        return "I cannot decide" if grade_a == 0 else truthful(request)

    with FakeOpenAI(stubborn) as server:
        args = ("--prompt", "certainty", "--personality", "default", "--pairs-per-topic", "2", "--run-name", "r")
        result = pairwise_cli(capsys, sample.warehouse, server, *args)
    assert result.exit_code != 0
    assert "pairwise gate failed" in result.err and "[failure_share] default certainty" in result.err
    failed = rows(sample.warehouse, "select reason, count(*) from pairwise_answers where status != 'ok' group by all")
    n_failed = failed[0][1]
    assert failed == [("missing [[verdict]] or [[certainty]]", n_failed)]
    seeds = Counter(r.body["seed"] for r in server.chat_requests)
    assert seeds == {0: 20, 1000: n_failed, 2000: n_failed, 3000: n_failed, 4000: n_failed}
    assert rows(sample.warehouse, "select status from pairwise_runs") == [("failed_check",)]


def test_a_run_name_keeps_its_parameters(sample, capsys):
    with FakeOpenAI(truthful) as server:
        base = ("--personality", "default", "--pairs-per-topic", "1", "--run-name", "kept")
        assert pairwise_cli(capsys, sample.warehouse, server, *base).exit_code == 0
        other = pairwise_cli(capsys, sample.warehouse, server, *base, "--seed", "7")
    assert other.exit_code != 0
    assert (
        other.err.strip()
        .splitlines()[-1]
        .endswith(
            "pairwise run 'kept' already exists with another collection, subset, model, seed, prompt or request "
            "parameters; choose another --run-name"
        )
    )


def test_unknown_collection_is_one_clear_line(settings, capsys):
    with FakeOpenAI(truthful) as server:
        result = pairwise_cli(capsys, settings.warehouse, server)
    assert result.exit_code != 0
    assert "collection 'sample' is not in the warehouse: run `peras ingest sample`" in result.err
