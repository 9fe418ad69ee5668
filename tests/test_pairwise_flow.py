"""Issue 19: `peras pairwise` through the real CLI and HTTP against the scripted server - both orders asked, the
study's sampling, failures regenerated, a rerun sends nothing, a run keeps its parameters."""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from pathlib import Path

import duckdb
import pytest

from peras.llm.constraints import PROBE_MESSAGES
from peras.paths import PROJECT_ROOT
from support.fake_openai import FakeOpenAI, Reply, speaking
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
    """(prompt, grade of passage A, grade of passage B) of a pairwise request ('mp_logp': the 'logp' and 'mp'
    prompts' template)."""
    if '"selected_output"' in content:
        found = dict(OUTPUT.findall(content))
        prompt = "self" if '"confidence_score": number' in content else "mp_logp"
        return prompt, GRADES[found["a"]], GRADES[found["b"]]
    found = dict(PASSAGE.findall(content))
    return ("tie" if "[[C]]" in content else "certainty"), GRADES[found["A"]], GRADES[found["B"]]


def answer(prompt: str, choice: str, confidence: int) -> str:
    """The answer a model continuing the prompt would write."""
    if prompt == "mp_logp":
        return choice_json(choice.lower())
    if prompt == "self":
        return json.dumps({"selected_output": f"Output ({choice.lower()})", "confidence_score": confidence})
    return f"{choice}]]" if prompt == "tie" else f"{choice}]] I am sure: [[{confidence}]]"


def truthful(request: dict) -> str | Reply:
    """The more relevant passage (a tie when equal, or A where no tie is offered), certainty 90 (60 on ties); LogP
    requests get their answer's log-probabilities (0.9 for the letter chosen)."""
    prompt, grade_a, grade_b = shown(request["messages"][-1]["content"])
    if request.get("logprobs"):
        letter = "b" if grade_b > grade_a else "a"
        return Reply(choice_json(letter), logprobs=[json_tokens(letter, {letter: 0.9, "ab".replace(letter, ""): 0.1})])
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
        # 5 topics x 4 pairs x 2 orders x 5 prompts x 2 personalities; 'mp' sends 10 requests per answer
        assert len(server.chat_requests) == 80 * 4 + 80 * 10
        assert "20 pairs, 400 answers (400 new; 1,120 requests sent, 0 reused), 0 failed" in result.out
        bodies = [r.body for r in server.chat_requests]
        sampling = Counter(
            (shown(b["messages"][0]["content"])[0], b["temperature"], b.get("top_p"), b.get("seed"), "logprobs" in b)
            for b in bodies
        )
        assert sampling == {
            ("certainty", 0.7, 0.95, 0, False): 80,
            ("tie", 0.7, 0.95, 0, False): 80,
            ("self", 0, 1, 0, False): 80,
            ("mp_logp", 0, 1, 0, True): 80,  # logp
        } | {("mp_logp", 0.7, 1, seed, False): 80 for seed in range(10)}  # mp
        personality = rows(sample.warehouse, "select instruction from personalities where personality = 'HA'")[0][0]
        assert sum(b["messages"][0]["content"].startswith(personality + "\n\n") for b in bodies) == 560

        again = pairwise_cli(capsys, sample.warehouse, server, *args)
        assert again.exit_code == 0, again.err
        assert len(server.chat_requests) == 1120  # nothing sent
        assert "(0 new; 0 requests sent, 0 reused)" in again.out

    stored = rows(
        sample.warehouse,
        "select query_id, doc_1, doc_2, personality, prompt, list(position order by position), count(*) "
        "from pairwise_answers group by all",
    )
    assert len(stored) == 5 * 4 * 5 * 2 and all(r[5] == ["AB", "BA"] for r in stored)
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


# The overconfidence study's MP and LogP prompt (its appendix A.3) as its section 3.1 runs it: LogP once at
# temperature 0 with the log-probabilities, MP by 10 answers at temperature 0.7.
def choice_json(letter: str) -> str:
    return json.dumps({"selected_output": f"Output ({letter})", "explanation": "x"})


def json_tokens(letter: str, top: dict[str, float]) -> list[dict]:
    """The answer's tokens as a server returns them: the letter after "Output (" is its own token, with `top`
    (token -> probability) as its top log-probabilities."""
    pieces = [
        '{"',
        "selected",
        "_output",
        '":',
        ' "',
        "Output",
        " (",
        letter,
        ')",',
        ' "',
        "explanation",
        '":',
        ' "x"}',
    ]
    assert "".join(pieces) == choice_json(letter)
    return [
        {
            "token": piece,
            "logprob": -0.01,
            "top_logprobs": [{"token": t, "logprob": math.log(p), "bytes": None} for t, p in top.items()]
            if piece == letter
            else [],
        }
        for piece in pieces
    ]


def mp_logp_grades(request: dict) -> tuple[int, int]:
    """Grades of the passages shown as Output (a) and Output (b)."""
    found = dict(OUTPUT.findall(request["messages"][-1]["content"]))
    return GRADES[found["a"]], GRADES[found["b"]]


def logp_and_mp(request: dict) -> str | Reply:
    grade_a, grade_b = mp_logp_grades(request)
    if request.get("logprobs"):  # LogP: the better passage (a on ties), with hand-set option probabilities
        if grade_a >= grade_b:  # p(a) = 0.6 / (0.6 + 0.2) = 0.75; "(" is no option
            return Reply(choice_json("a"), logprobs=[json_tokens("a", {"a": 0.6, "b": 0.2, "(": 0.1})])
        return Reply(choice_json("b"), logprobs=[json_tokens("b", {"b": 0.9, "a": 0.05})])  # 0.9 / 0.95
    seed = request["seed"] % 1000  # MP: sample i is sent with seed i, its regenerations with i + 1000 k
    if grade_a == grade_b:  # a tie: samples 0-4 choose b, 5-9 a: 5 to 5, the earlier sample's b wins
        return choice_json("b" if seed < 5 else "a")
    if seed == 9:  # never readable, even regenerated: it chooses nothing and still counts among the 10
        return "I cannot choose."
    better, worse = ("a", "b") if grade_a > grade_b else ("b", "a")
    return choice_json(better if seed < 6 else worse)  # 6 of 10 for the better passage


def test_logp_and_mp_as_the_overconfidence_study_ran_them_then_a_rerun_sends_nothing(sample, capsys):
    args = ("--prompt", "logp", "--prompt", "mp", "--personality", "default", "--pairs-per-topic", "2")
    with FakeOpenAI(logp_and_mp) as server:
        result = pairwise_cli(capsys, sample.warehouse, server, *args)
        assert result.exit_code == 0, result.err
        bodies = [r.body for r in server.chat_requests]
        # 5 topics x 2 pairs (a tie, one a grade apart) x 2 orders: 20 LogP requests; MP 10 samples each, and the
        # unreadable sample 9 of the 10 answers on pairs graded apart regenerated 4 times
        assert len(bodies) == 20 + 20 * 10 + 10 * 4
        assert "10 pairs, 40 answers (40 new; 260 requests sent, 0 reused), 0 failed" in result.out
        again = pairwise_cli(capsys, sample.warehouse, server, *args)
        assert again.exit_code == 0, again.err
        assert len(server.chat_requests) == 260  # nothing sent
        assert "(0 new; 0 requests sent, 0 reused)" in again.out

    logp = [b for b in bodies if b.get("logprobs")]
    assert {(b["temperature"], b["top_p"], b["seed"], b["top_logprobs"]) for b in logp} == {(0, 1, 0, 20)}
    mp = [b for b in bodies if not b.get("logprobs")]
    assert {(b["temperature"], b["top_p"]) for b in mp} == {(0.7, 1)}
    assert Counter(b["seed"] for b in mp) == {i: 20 for i in range(10)} | {9 + 1000 * k: 10 for k in (1, 2, 3, 4)}
    assert all(b["messages"][-1]["content"].startswith("You are a helpful assistant") for b in bodies)

    confidences = rows(
        sample.warehouse,
        "select prompt, relevance_1 = relevance_2, choice, round(confidence, 9), count(*) from pairwise_answers"
        " where status = 'ok' group by all order by all",
    )
    assert confidences == [
        ("logp", False, "A", 75.0, 5),  # the better passage shown as Output (a)
        ("logp", False, "B", round(100 * 0.9 / 0.95, 9), 5),
        ("logp", True, "A", 75.0, 10),
        ("mp", False, "A", 60.0, 5),  # 6 of 10 samples: the unreadable one counts
        ("mp", False, "B", 60.0, 5),
        ("mp", True, "B", 50.0, 10),  # 5 to 5: sample 0's choice
    ]
    accuracy = rows(
        sample.warehouse,
        "select prompt, n_answers, n_failures, n_no_ties, accuracy_no_ties, accuracy_ties, share_a, consistency,"
        " n_high, accuracy_high, n_low, accuracy_low from pairwise_accuracy order by prompt",
    )
    assert accuracy == [
        ("logp", 20, 0, 10, 1.0, 0.5, 0.75, 0.5, 5, 1.0, 5, 1.0),
        ("mp", 20, 0, 10, 1.0, 0.5, 0.25, 0.5, 0, None, 10, 1.0),
    ]
    # the calibration macros score them as any confidence: Brier over the 10 pairs graded apart, all right
    brier = rows(sample.warehouse, "select confidence_method, brier from pairwise_calibration order by all")
    assert [(m, round(b, 12)) for m, b in brier] == [
        ("logp", round((5 * 0.25**2 + 5 * (1 - 0.9 / 0.95) ** 2) / 10, 12)),
        ("mp", round(0.4**2, 12)),
    ]
    # an MP answer names the first sample that chose its verdict
    assert rows(
        sample.warehouse,
        "select distinct r.params->>'seed' from pairwise_answers a join llm_requests r using (request_id)"
        " where a.prompt = 'mp'",
    ) == [("0",)]


def test_logp_without_its_options_and_mp_without_a_readable_sample_are_failures_with_reasons(sample, capsys):
    def respond(request: dict) -> str | Reply:
        if request.get("logprobs"):  # read, but neither letter among the log-probabilities
            return Reply(choice_json("a"), logprobs=[json_tokens("a", {"x": 0.9})])
        return "I cannot choose."

    args = ("--prompt", "logp", "--prompt", "mp", "--personality", "default", "--pairs-per-topic", "1")
    with FakeOpenAI(respond) as server:
        result = pairwise_cli(capsys, sample.warehouse, server, *args)
        # 5 ties x 2 orders: LogP once each; MP 10 samples, each asked 5 times (4 regenerations)
        assert len(server.chat_requests) == 10 + 10 * 10 * 5
    assert result.exit_code != 0
    assert "[failure_share] default logp: 10 of 10 answers failed" in result.err
    assert "[failure_share] default mp: 10 of 10 answers failed" in result.err
    assert rows(
        sample.warehouse,
        "select prompt, status, reason, choice, confidence, count(*) from pairwise_answers group by all order by all",
    ) == [
        ("logp", "logprob_failure", "logprob: no option token", None, None, 10),
        ("mp", "parse_failure", "no readable sample of 10: no JSON object", None, None, 10),
    ]


# Issue 48, item 9: logp on an endpoint without log-probabilities asked every logp request, failed them all, and the
# gate refused the whole run (every other prompt's answers with it). The probe asks first (--answer-format auto).
ONE_PAIR = ("--personality", "default", "--pairs-per-topic", "1")
NO_LOGPROBS = "the endpoint returns no log-probabilities"


def is_probe(body: dict) -> bool:
    return body["messages"] == PROBE_MESSAGES


def test_logp_named_on_an_endpoint_without_log_probabilities_is_refused_before_asking(sample, capsys, monkeypatch):
    monkeypatch.setenv("PERAS_ANSWER_FORMAT", "auto")
    with FakeOpenAI(speaking(None, truthful), logprobs=False) as server:
        result = pairwise_cli(capsys, sample.warehouse, server, "--prompt", "logp", "--prompt", "certainty", *ONE_PAIR)
        bodies = [r.body for r in server.chat_requests]
    assert len(bodies) == 3 and all(map(is_probe, bodies))  # the answer format's 2 and 1 for log-probabilities
    assert (result.exit_code, result.err.splitlines()[-1]) == (
        2,
        f"error: pairwise --prompt logp: {NO_LOGPROBS} (the probe asked for them); ask the other prompts, or"
        " --prompt all for every prompt it supports",
    )
    assert rows(sample.warehouse, "select count(*) from pairwise_runs") == [(0,)]


def test_all_on_an_endpoint_without_log_probabilities_asks_every_other_prompt_said_once(sample, capsys, monkeypatch):
    monkeypatch.setenv("PERAS_ANSWER_FORMAT", "auto")
    with FakeOpenAI(speaking(None, truthful), logprobs=False) as server:
        result = pairwise_cli(capsys, sample.warehouse, server, "--prompt", "all", *ONE_PAIR)
        assert result.exit_code == 0, result.err
        assert result.err.splitlines().count(f"pairwise: logp left out: {NO_LOGPROBS}") == 1
        asked = [r.body for r in server.chat_requests if not is_probe(r.body)]
        assert len(server.chat_requests) - len(asked) == 3
        # 5 pairs x 2 orders: certainty, tie and self once each, mp 10 samples; nothing asks for log-probabilities
        assert len(asked) == 10 * 3 + 10 * 10 and not any(b.get("logprobs") for b in asked)
        assert "5 pairs, 40 answers (40 new; 130 requests sent, 0 reused), 0 failed" in result.out
        again = pairwise_cli(capsys, sample.warehouse, server, "--prompt", "all", *ONE_PAIR)
        assert again.exit_code == 0, again.err
        assert len(server.chat_requests) == 133  # the run records what the probe found: no probe, nothing asked
        assert again.err.splitlines().count(f"pairwise: logp left out: {NO_LOGPROBS}") == 1
    assert rows(sample.warehouse, "select distinct prompt from pairwise_answers order by 1") == [
        ("certainty",),
        ("mp",),
        ("self",),
        ("tie",),
    ]
    assert rows(sample.warehouse, "select status, scope->>'prompts' from pairwise_runs") == [
        ("published", '["certainty","tie","self","mp"]')
    ]


def test_logp_on_an_endpoint_with_log_probabilities_is_asked_after_one_probe_request(sample, capsys, monkeypatch):
    monkeypatch.setenv("PERAS_ANSWER_FORMAT", "auto")
    with FakeOpenAI(speaking(None, truthful)) as server:
        result = pairwise_cli(capsys, sample.warehouse, server, "--prompt", "logp", *ONE_PAIR)
        assert result.exit_code == 0, result.err
        assert "logp" not in result.err
        assert sum(is_probe(r.body) for r in server.chat_requests) == 3
        assert "5 pairs, 10 answers (10 new; 10 requests sent, 0 reused), 0 failed" in result.out
        again = pairwise_cli(capsys, sample.warehouse, server, "--prompt", "logp", *ONE_PAIR)
        assert again.exit_code == 0, again.err
        assert len(server.chat_requests) == 13  # nothing sent, the probe neither
    params = json.loads(rows(sample.warehouse, "select params from pairwise_runs")[0][0])
    assert (params["returns_logprobs"], params["probe_requests"]) == (True, 3)


def test_a_run_extended_with_logp_probes_once_and_records_it(sample, capsys, monkeypatch):
    monkeypatch.setenv("PERAS_ANSWER_FORMAT", "auto")
    with FakeOpenAI(speaking(None, truthful)) as server:
        first = pairwise_cli(capsys, sample.warehouse, server, "--prompt", "certainty", *ONE_PAIR)
        assert first.exit_code == 0, first.err
        assert len(server.chat_requests) == 2 + 10  # the answer-format probe, no log-probabilities asked
        args = ("--prompt", "certainty", "--prompt", "logp", *ONE_PAIR)
        extended = pairwise_cli(capsys, sample.warehouse, server, *args)
        assert extended.exit_code == 0, extended.err
        assert len(server.chat_requests) == 12 + 1 + 10  # the resume asks for log-probabilities once, then logp
        again = pairwise_cli(capsys, sample.warehouse, server, *args)
        assert again.exit_code == 0, again.err
        assert len(server.chat_requests) == 23  # what the probe found is recorded: nothing sent
    params = json.loads(rows(sample.warehouse, "select params from pairwise_runs")[0][0])
    assert (params["returns_logprobs"], params["probe_requests"]) == (True, 3)
