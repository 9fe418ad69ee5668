"""Issue 30 through the real CLI and HTTP: `peras pairwise --answer-format` against a scripted server speaking each
dialect - the probe, the exact request fields, the run's record, a rerun that sends nothing, a server that refuses or
ignores the fields, and a constrained and a free run that share no answer."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from peras.llm.constraints import PROBE_MESSAGES, answer_shape, constraint_fields
from support.fake_openai import DIALECT_FIELDS, FakeOpenAI, speaking
from tests.helpers import run_cli
from tests.prompt_files import prompt_file
from tests.test_pairwise_flow import shown, truthful

pytestmark = pytest.mark.integration

# the personalized-judge study's three prompts (logp and mp, the overconfidence study's: test_pairwise_flow)
ARGS = (
    "--prompt",
    "certainty",
    "--prompt",
    "tie",
    "--prompt",
    "self",
    "--personality",
    "default",
    "--pairs-per-topic",
    "1",
)
PROMPTS = {"certainty": "pairwise_certainty", "tie": "pairwise_tie", "self": "self_pairwise"}
CONSTRAINT_FIELDS = {name for fields in DIALECT_FIELDS.values() for name in fields}


@pytest.fixture
def sample(settings, tmp_path, monkeypatch, ingested):
    """The shipped sample in a fresh warehouse."""
    monkeypatch.setenv("PERAS_ENDPOINT_SLOTS_DIR", str(tmp_path / "slots"))
    ingested("sample", settings)
    return settings


def pairwise(capsys, warehouse: Path, server: FakeOpenAI, *args: str):
    return run_cli(
        capsys, "pairwise", "sample", "--warehouse", str(warehouse), "--base-url", server.base_url,
        "--model", "fake-model", *ARGS, *args,
    )  # fmt: skip


def rows(warehouse: Path, sql: str) -> list[tuple]:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def is_probe(body: dict) -> bool:
    return body["messages"] == PROBE_MESSAGES


def sent_fields(body: dict) -> dict:
    return {key: value for key, value in body.items() if key in CONSTRAINT_FIELDS}


@pytest.mark.parametrize("dialect", ["vllm", "vllm-guided", "llama.cpp", "openai"])
def test_each_dialect_is_probed_once_then_every_request_carries_exactly_its_fields(sample, capsys, dialect):
    with FakeOpenAI(speaking(dialect, truthful)) as server:
        result = pairwise(capsys, sample.warehouse, server, "--answer-format", "auto")
        assert result.exit_code == 0, result.err
        assert result.err.count("answer format:") == 1
        assert f"answer format: {dialect} (the probe's {dialect} constraint held)" in result.err
        bodies = [r.body for r in server.chat_requests]
        assert sum(map(is_probe, bodies)) == (2 if dialect == "openai" else 1)
        asked = [b for b in bodies if not is_probe(b)]
        assert len(asked) == 30  # 5 topics x 1 pair x 2 orders x 3 prompts
        for body in asked:
            prompt = PROMPTS[shown(body["messages"][0]["content"])[0]]
            assert sent_fields(body) == (constraint_fields(answer_shape(prompt_file(prompt)), dialect) or {})
        if dialect == "openai":  # JSON only: the bracket prompts go as free text
            assert sum(bool(sent_fields(b)) for b in asked) == 10

        again = pairwise(capsys, sample.warehouse, server, "--answer-format", "auto")
        assert again.exit_code == 0, again.err
        assert len(server.chat_requests) == len(bodies)  # a rerun sends nothing, not even the probe
        assert f"answer format: {dialect} (as the run resumed asked)" in again.err

    params = json.loads(rows(sample.warehouse, "select params from pairwise_runs")[0][0])
    assert (params["answer_format"], params["answer_probe"]) == (dialect, f"the probe's {dialect} constraint held")
    stored = rows(sample.warehouse, "select params from llm_requests where purpose = 'pairwise'")
    with_fields = [p for (p,) in stored if set(json.loads(p).get("extra_body", {})) & CONSTRAINT_FIELDS]
    assert len(with_fields) == (10 if dialect == "openai" else 30)  # the request row says how it was asked


@pytest.mark.parametrize(
    ("unknown", "found"),
    [
        (
            "reject",
            "no constraint held, answers are free text read by the parsers: vllm + vllm-guided + llama.cpp: rejected"
            " (HTTP 400); openai: rejected (HTTP 400); vllm: rejected (HTTP 400); vllm-guided: rejected (HTTP 400);"
            " llama.cpp: rejected (HTTP 400)",
        ),
        (
            "ignore",
            "no constraint held, answers are free text read by the parsers: vllm + vllm-guided + llama.cpp: ignored;"
            " openai: ignored",
        ),
    ],
)
def test_a_server_that_refuses_or_ignores_the_fields_is_asked_free_text_said_once(
    sample, capsys, monkeypatch, unknown, found
):
    monkeypatch.delenv("PERAS_ANSWER_FORMAT")  # the default, auto (tests/conftest.py sets free for other tests)
    with FakeOpenAI(speaking(None, truthful, unknown=unknown)) as server:
        result = pairwise(capsys, sample.warehouse, server)
        assert result.exit_code == 0, result.err
        assert result.err.count("answer format:") == 1
        assert f"answer format: free ({found})" in result.err
        asked = [r.body for r in server.chat_requests if not is_probe(r.body)]
    assert len(asked) == 30 and not any(sent_fields(body) for body in asked)
    assert "30 answers (30 new; 30 requests sent, 0 reused), 0 failed" in result.out  # parsed as today
    params = json.loads(rows(sample.warehouse, "select params from pairwise_runs")[0][0])
    assert (params["answer_format"], params["answer_probe"]) == ("free", found)


def test_a_constrained_and_a_free_run_over_the_same_pairs_share_no_answer(sample, capsys):
    with FakeOpenAI(speaking("vllm", truthful)) as server:
        free = pairwise(capsys, sample.warehouse, server, "--answer-format", "free", "--run-name", "f")
        assert free.exit_code == 0, free.err
        assert "answer format" not in free.err  # the user's own choice: nothing to say
        assert len(server.chat_requests) == 30  # no probe
        constrained = pairwise(capsys, sample.warehouse, server, "--answer-format", "constrained", "--run-name", "c")
        assert constrained.exit_code == 0, constrained.err
        assert len(server.chat_requests) == 30 + 1 + 30  # every constrained request asked anew
        switched = pairwise(capsys, sample.warehouse, server, "--answer-format", "free", "--run-name", "c")
    assert switched.exit_code != 0
    refused = "error: request parameters differ (answer_format): pairwise run"
    assert switched.err.strip().splitlines()[-1].startswith(refused)
    by_run = rows(
        sample.warehouse,
        "select r.run_name, count(distinct q.request_id) from llm_requests q join pairwise_runs r"
        " on q.run_id = r.pairwise_run_id group by all order by 1",
    )
    assert by_run == [("c", 30), ("f", 30)]
    shared = rows(
        sample.warehouse,
        "select count(*) from (select request_id from llm_requests group by 1 having count(distinct run_id) > 1)",
    )
    assert shared == [(0,)]


def test_constrained_refuses_an_endpoint_that_enforces_nothing_in_one_line(sample, capsys):
    with FakeOpenAI(speaking(None, truthful)) as server:
        result = pairwise(capsys, sample.warehouse, server, "--answer-format", "constrained")
        assert len(server.chat_requests) == 2  # the probe only
    assert result.exit_code != 0
    assert (
        result.err.strip()
        .splitlines()[-1]
        .startswith("error: --answer-format constrained: the endpoint enforces no constraint (no constraint held")
    )


def test_a_constrained_judge_run_passes_its_gate_and_plans_the_constraint(sample, capsys):
    # The judge's gate compares every request with the run's planned parameters: they hold the constraint too.
    with FakeOpenAI(speaking("vllm-guided")) as server:
        args = ("--cot", "without", "--personality", "default", "--limit-pairs", "2", "--answer-format", "auto")
        result = run_cli(
            capsys, "judge", "sample", "--warehouse", str(sample.warehouse), "--base-url", server.base_url,
            "--model", "fake-model", *args,
        )  # fmt: skip
        assert result.exit_code == 0, result.err
        asked = [r.body for r in server.chat_requests if not is_probe(r.body)]
    fields = sorted(json.dumps(sent_fields(body)) for body in asked)  # 2 labels, then their 2 confidences
    assert (
        fields
        == [json.dumps({"guided_choice": ["0", "1", "2", "3"]})] * 2
        + [json.dumps({"guided_regex": "100|[1-9]?[0-9]"})] * 2
    )
    params = json.loads(rows(sample.warehouse, "select params from judge_runs")[0][0])
    assert params["label_params_nocot"]["extra_body"] == {"guided_choice": ["0", "1", "2", "3"]}
    assert params["answer_format"] == "vllm-guided"


def test_the_request_budget_counts_the_probe_resumes_included(sample, capsys):
    # Issue 48, item 8: --request-budget 5 let 7 requests reach the server, the probe's 2 not counted.
    with FakeOpenAI(speaking("openai", truthful)) as server:  # the probe asks twice: together, then openai alone
        spent = pairwise(capsys, sample.warehouse, server, "--answer-format", "auto", "--request-budget", "5")
        assert len(server.chat_requests) == 5
        assert sum(is_probe(r.body) for r in server.chat_requests) == 2
        assert spent.exit_code == 1
        assert spent.err.splitlines()[-1] == (
            "error: request budget of 5 reached (5 requests sent); raise --request-budget to go on"
        )
        again = pairwise(capsys, sample.warehouse, server, "--answer-format", "auto", "--request-budget", "5")
        assert len(server.chat_requests) == 5  # the resume probes nothing and knows the probe's 2 were spent
        assert again.err.splitlines()[-1] == spent.err.splitlines()[-1]
        more = pairwise(capsys, sample.warehouse, server, "--answer-format", "auto", "--request-budget", "32")
        assert more.exit_code == 0, more.err
        assert len(server.chat_requests) == 32  # 2 probe requests and 30 answers: the budget exactly
    params = json.loads(rows(sample.warehouse, "select params from pairwise_runs")[0][0])
    assert (params["answer_format"], params["probe_requests"]) == ("openai", 2)


@pytest.mark.parametrize(("budget", "sent"), [("0", 0), ("1", 1)])
def test_a_budget_the_probe_uses_up_stops_the_command_in_one_line_before_the_run(sample, capsys, budget, sent):
    with FakeOpenAI(speaking("openai", truthful)) as server:
        result = pairwise(capsys, sample.warehouse, server, "--answer-format", "auto", "--request-budget", budget)
        assert len(server.chat_requests) == sent  # never more than the budget
    assert (result.exit_code, result.err.splitlines()) == (
        2,
        [
            f"error: --request-budget {budget} is used up by the answer-format probe ({sent} of its 1-5 tiny requests"
            " sent): raise it, or give --answer-format free, which sends no probe"
        ],
    )
    assert rows(sample.warehouse, "select count(*) from pairwise_runs") == [(0,)]  # stopped before the claim
