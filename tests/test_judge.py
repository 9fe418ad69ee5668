"""The judge flow over real HTTP against a scripted OpenAI-compatible server."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

import duckdb
import pytest

from flows.judge import judge
from peras.errors import CheckFailed, UsageError
from support.fake_openai import FakeOpenAI, Fault, instant
from support.prefect_server import free_port

pytestmark = pytest.mark.integration

HA = (
    "You are a person with very high Agreeableness. You always listen kindly, show empathy, and seek to help "
    "others. When responding, express understanding and warmth, offer supportive suggestions, and use gentle, "
    "cooperative language. Emphasize collaboration, kindness, and a willingness to forgive or accommodate "
    "differing viewpoints."
)
QUERY = "how long should you boil an egg for a soft yolk"
PASSAGE = (
    "For a soft, runny yolk, lower the egg into water that is already at a rolling boil and cook it for six "
    "minutes, then move it straight into cold water. Six minutes gives a set white and a liquid yolk for a "
    "large egg taken from the fridge."
)
# The study's prompts, typed out again here (not read from peras/prompts) so that a drift is caught.
NOCOT = (
    "You are an expert in evaluating the relevance of text passages to user queries. Your task is to assign a "
    "relevance score to a passage based on how well it addresses the information need expressed in a query. Use "
    "the following scale:\n"
    "[3] Perfectly relevant: The passage is fully focused on the query and provides a clear and complete answer.\n"
    "[2] Highly relevant: The passage provides some relevant information but may include extraneous details or "
    "lack clarity.\n"
    "[1] Related: The passage is tangentially related to the query but does not answer it.\n"
    "[0] Irrelevant: The passage has no connection to the query.\n"
)
LABEL_NOCOT = (
    NOCOT + "Respond with a single integer (0, 1, 2, or 3) and no explanation.\n"
    f"Query: {QUERY} Passage: {PASSAGE}\n"
    "How relevant is this passage to the query? Provide a single integer (0 to 3). Do not provide any "
    "extra words, just a number from 0 to 3."
)
CONFIDENCE = (
    NOCOT + f"Query: {QUERY} Passage: {PASSAGE}\n"
    "Your given relevance score is 3, please give a confidence score for this answer representing how "
    "confident you believe this answer is correct. 0 means you have no confidence at all, and 100 means "
    "you have absolute confidence. ONLY return a number from 0 to 100 to show your confidence to your "
    "answer and do not return any other content."
)


def rows(settings, sql: str) -> list[tuple]:
    con = duckdb.connect(str(settings.warehouse), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


@pytest.fixture
def sample(settings, ingested):
    ingested("sample", settings)
    return settings


def use(settings, server: FakeOpenAI, model: str = "fake-model"):
    settings.base_urls = [server.base_url]
    settings.model = model
    return settings


def test_prompts_are_verbatim_and_params_recorded(sample):
    with FakeOpenAI(lambda request: "3" if "relevance score is" not in str(request["messages"]) else "90") as server:
        judge(
            collection="sample",
            personalities=["HA"],
            cot=[False],
            limit_pairs=1,
            settings=use(sample, server),
        )
        bodies = [r.body for r in server.chat_requests]
    assert [b["messages"] for b in bodies] == [
        [{"role": "user", "content": f"{HA}\n\n{LABEL_NOCOT}"}],
        [{"role": "user", "content": f"{HA}\n\n{CONFIDENCE}"}],
    ]
    assert all(b["temperature"] == 0 and b["top_p"] == 1.0 for b in bodies)
    assert rows(sample, "select label, confidence, status from judgments") == [(3, 90.0, "ok")]
    assert rows(
        sample, "select purpose, attempts, raw_text, params->>'temperature' from llm_requests order by 1 desc"
    ) == [("label", 1, "3", "0.0"), ("confidence", 1, "90", "0.0")]


def test_default_personality_has_no_instruction(sample):
    with FakeOpenAI(lambda request: "1" if "relevance score is" not in str(request["messages"]) else "50") as server:
        judge(
            collection="sample",
            personalities=["default"],
            cot=[False],
            limit_pairs=1,
            settings=use(sample, server),
        )
        first = server.chat_requests[0].body["messages"][0]["content"]
    assert first == LABEL_NOCOT


COT_ANSWERS = [
    # several numbers: the final score counts, not the first digit
    ("M = 3, T = 1. Weighing both, final score (O): 2", 2, "ok"),
    # a fraction: the denominator is not a score
    ("Score: 2/3", 2, "ok"),
    # out of range
    ("85%", None, "label_parse_failure"),
    # a refusal never becomes a label
    ("I cannot help with that.", None, "label_parse_failure"),
    # empty
    ("", None, "label_parse_failure"),
]


@pytest.mark.parametrize(("answer", "label", "status"), COT_ANSWERS)
def test_cot_answers_parse_by_the_documented_rule(sample, answer, label, status):
    def respond(request):
        return answer if "relevance score is" not in str(request["messages"]) else "85%"

    with FakeOpenAI(respond) as server:
        sample.max_parse_failure_share = 1.0
        judge(
            collection="sample",
            personalities=["default"],
            cot=[True],
            limit_pairs=1,
            settings=use(sample, server),
        )
        n_requests = len(server.chat_requests)
    got = rows(sample, "select label, confidence, status from judgments")
    assert got == [(label, 85.0 if label is not None else None, status)]
    # A failed parse is regenerated 4 times (5 attempts) and stored with every raw text.
    attempts = rows(sample, "select attempts, json_array_length(attempt_texts) from llm_requests where purpose='label'")
    assert attempts == ([(1, 1)] if label is not None else [(5, 5)])
    assert n_requests == (2 if label is not None else 5)


def test_retries_on_500_and_429_with_retry_after(sample):
    replies = iter([Fault(500), Fault(429, retry_after="1"), "2", "70"])
    with FakeOpenAI(lambda request: next(replies)) as server:
        sample.max_retries = 3
        started = time.monotonic()
        judge(
            collection="sample",
            personalities=["default"],
            cot=[False],
            limit_pairs=1,
            settings=use(sample, server),
        )
        waited = time.monotonic() - started
    assert rows(sample, "select label, confidence from judgments") == [(2, 70.0)]
    assert waited >= 1.0


def test_unreachable_server_is_one_clear_error(sample, capsys):
    from tests.helpers import run_cli

    port = free_port()
    result = run_cli(
        capsys,
        "judge",
        "sample",
        "--warehouse",
        str(sample.warehouse),
        "--base-url",
        f"http://127.0.0.1:{port}/v1",
        "--model",
        "m",
    )
    assert result.exit_code == 1
    assert result.err.startswith(f"error: cannot reach http://127.0.0.1:{port}/v1")
    assert len(result.err.strip().splitlines()) == 1


def test_all_personalities_both_settings_and_rerun_sends_nothing(sample):
    with FakeOpenAI(instant) as server:
        first = judge(collection="sample", settings=use(sample, server))
        sent = len(server.chat_requests)
        second = judge(collection="sample", settings=use(sample, server))
        assert len(server.chat_requests) == sent
    assert (first["n_planned"], first["n_judged_now"], second["n_judged_now"]) == (880, 880, 0)
    assert rows(sample, "select count(*), count(distinct personality), count(distinct cot) from judgments") == [
        (880, 11, 2)
    ]
    assert rows(sample, "select count(*) from stg_judgment_facts") == [(880,)]
    assert rows(sample, "select count(*) from personalities") == [(11,)]


def test_logprob_and_sampling_methods_side_by_side(sample):
    with FakeOpenAI(instant) as server:
        judge(
            collection="sample",
            personalities=["default"],
            cot=[False],
            limit_pairs=2,
            n_samples=4,
            confidence_methods=["verbalized", "logprob", "sampling"],
            settings=use(sample, server),
        )
    got = rows(
        sample,
        """select confidence_method, count(*), min(confidence) between 0 and 100,
                          count(expected_score) from judgments group by 1 order by 1""",
    )
    assert got == [("logprob", 2, True, 2), ("sampling", 2, True, 2), ("verbalized", 2, True, 0)]
    # The fake server gives the chosen label 0.7 of the label mass in its top log-probabilities.
    assert rows(sample, "select distinct round(confidence, 6) from judgments where confidence_method = 'logprob'") == [
        (70.0,)
    ]


def test_parse_failures_above_threshold_fail_the_gate_and_publish_nothing(sample):
    def respond(request):
        content = str(request["messages"])
        if "relevance score is" in content:
            return "60"
        return "I would rather not say." if "very low Agreeableness" in content else "1"

    with (
        FakeOpenAI(respond) as server,
        pytest.raises(CheckFailed, match=r"LA cot=false verbalized: 4 of 4 failed"),
    ):
        judge(
            collection="sample",
            personalities=["default", "LA"],
            cot=[False],
            limit_pairs=4,
            settings=use(sample, server),
        )
    assert rows(sample, "select status from judge_runs") == [("failed_check",)]
    assert rows(sample, "select count(*) from stg_judgment_facts") == [(0,)]
    assert rows(sample, "select reason from judgments where status != 'ok' limit 1")[0][0]


def judge_process(settings, model: str, port: int, run_name: str, chunk_size: int = 64) -> subprocess.Popen:
    env = {**os.environ, "PERAS_WAREHOUSE": str(settings.warehouse), "PERAS_CONCURRENCY": "4"}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cli.main",
            "judge",
            "sample",
            "--base-url",
            f"http://127.0.0.1:{port}/v1",
            "--model",
            model,
            "--run-name",
            run_name,
            "--chunk-size",
            str(chunk_size),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture
def slow_server():
    """A fake server in its own process that answers after 5 ms (so a judge run takes a few seconds)."""
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "support.fake_openai",
            "--port",
            str(port),
            "--models",
            "model-a",
            "model-b",
            "--delay",
            "0.005",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_until_serving(port)
    yield port
    proc.terminate()
    proc.wait(timeout=10)


def wait_until_serving(port: int, timeout_s: float = 60.0) -> None:
    """Poll the server's model list until it answers (a loaded machine may take seconds to start it)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            if time.monotonic() > deadline:
                raise
        time.sleep(0.05)


def test_kill_9_then_rerun_completes_without_loss_or_duplicates(sample, slow_server):
    proc = judge_process(sample, "model-a", slow_server, "killed", chunk_size=4096)  # nothing loaded before the kill
    shards = sample.shards
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # kill once some judgments are journaled
        lines = sum(p.read_text().count("\n") for p in shards.glob("**/*.outcomes.jsonl")) if shards.exists() else 0
        if lines >= 100:
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert lines >= 100
    rerun = judge_process(sample, "model-a", slow_server, "killed")
    out, err = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, err
    assert re.search(r"killed: 880 judgments \((\d+) new", out)
    assert int(re.search(r"\((\d+) new", out).group(1)) <= 880 - 100
    assert rows(
        sample,
        """select count(*), count(distinct (query_id, doc_id, personality, cot, confidence_method))
                           from judgments""",
    ) == [(880, 880)]
    assert rows(sample, "select status from judge_runs") == [("published",)]


def test_two_concurrent_runs_on_one_warehouse_both_complete(sample, slow_server):
    first = judge_process(sample, "model-a", slow_server, "run-a")
    second = judge_process(sample, "model-b", slow_server, "run-b")
    for proc in (first, second):
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    assert rows(
        sample,
        "select run_name, r.status, count(*) from judge_runs r join judgments using (run_id) group by all order by 1",
    ) == [("run-a", "published", 880), ("run-b", "published", 880)]


def test_a_request_the_server_refuses_is_recorded_and_the_run_goes_on(sample):
    def respond(request):
        content = str(request["messages"])
        if "relevance score is" in content:
            return "90"
        return (
            Fault(400, body={"error": {"message": "context length exceeded"}})
            if "e2" not in content and "Six minutes" in content
            else "2"
        )

    with FakeOpenAI(respond) as server:
        sample.max_parse_failure_share = 1.0
        judge(collection="sample", personalities=["default"], cot=[False], limit_pairs=2, settings=use(sample, server))
    got = rows(
        sample,
        "select doc_id, status, label, coalesce(reason, '') like '%HTTP 400: context length exceeded%' "
        "from judgments order by 1",
    )
    assert got == [("e1", "error", None, True), ("e2", "ok", 2, False)]


def test_a_limited_run_then_the_full_run_of_the_same_name_both_publish(sample):
    # A quick look (--limit-pairs, a deployment's limit_pairs parameter) must not break the nightly full run.
    with FakeOpenAI(instant) as server:
        first = judge(
            collection="sample",
            personalities=["default"],
            cot=[False],
            limit_pairs=3,
            run_name="nightly",
            settings=use(sample, server),
        )
        full = judge(
            collection="sample",
            personalities=["default", "HA"],
            cot=[False],
            run_name="nightly",
            settings=use(sample, server),
        )
    assert (first["n_planned"], full["n_planned"], full["n_judged_now"]) == (3, 80, 77)
    assert rows(sample, "select run_name, status from judge_runs") == [("nightly", "published")]


def test_a_run_asked_another_way_is_refused_by_the_one_claim_rule_naming_the_setting(sample):
    with FakeOpenAI(instant) as server:
        judge(
            collection="sample",
            personalities=["default"],
            cot=[False],
            limit_pairs=1,
            run_name="r",
            settings=use(sample, server),
        )
        with pytest.raises(UsageError) as raised:
            judge(
                collection="sample",
                personalities=["default"],
                cot=[False],
                limit_pairs=1,
                run_name="r",
                confidence_methods=["logprob"],
                settings=use(sample, server),
            )
    assert str(raised.value) == (
        "request parameters differ (confidence_methods): judge run 'r' already exists with another collection, model,"
        " confidence methods, prompt or request parameters; choose another --run-name"
    )


def test_a_judge_run_shows_its_progress_as_a_prefect_artifact(sample):
    # Deployment runs are watched in the Prefect UI: the run's progress artifact is updated as shards load.
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    with FakeOpenAI(instant) as server:
        result = judge(
            collection="sample",
            personalities=["default"],
            cot=[False],
            limit_pairs=6,
            chunk_size=2,
            settings=use(sample, server),
        )
    key = f"judge-progress-{result['run_id']}"
    with get_client(sync_client=True) as client:
        found = client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])))
    assert [(a.type, a.data) for a in found] == [("progress", 100.0)]


def test_a_huge_n_samples_is_asked_batch_by_batch_until_the_budget_stops_it(sample, capsys):
    from tests.helpers import run_cli

    with FakeOpenAI(instant) as server:
        endpoint = ["--base-url", server.base_url, "--model", "fake-model", "--warehouse", str(sample.warehouse)]
        result = run_cli(capsys, "judge", "sample", "--confidence-method", "sampling", "--personality", "default",
                         "--cot", "without", "--limit-pairs", "1", "--n-samples", "50000000", "--request-budget", "5",
                         *endpoint)  # fmt: skip
        sent = len(server.chat_requests)
    assert result.exit_code == 1 and result.err.count("\n") == 1, result.err
    assert "--request-budget" in result.err and "MemoryError" not in result.err, result.err
    assert sent <= 5


def test_items_worked_on_at_once_are_the_concurrency_and_a_back_off_lets_another_item_go(sample, monkeypatch):
    """tasks/engine/workers.py, Workers: as many items at once as requests may be in flight (256 items for 8 slots
    cost each request ~15 us of the loop's CPU in the slot queue's wake-ups); a request sleeping before its retry holds
    no slot, and another item takes it meanwhile."""
    from tasks.judge.asking import JudgeStage

    handle, at_once, peak = JudgeStage.handle, [0], [0]

    async def counted(self, item, ask):
        at_once[0] += 1
        peak[0] = max(peak[0], at_once[0])
        try:
            return await handle(self, item, ask)
        finally:
            at_once[0] -= 1

    monkeypatch.setattr(JudgeStage, "handle", counted)
    first = []

    def respond(request):
        if not first:  # the first request: retry after 1 s (Retry-After)
            first.append(request["messages"][-1]["content"])
            return Fault(429, retry_after=1)
        return instant(request)

    with FakeOpenAI(respond) as server:
        settings = use(sample, server)
        settings.concurrency = 2
        judge(collection="sample", personalities=["default"], cot=[False], limit_pairs=12, settings=settings)
        asked = [r.body["messages"][-1]["content"] for r in server.chat_requests]
    retried = asked.index(first[0], 1)  # the first request asked again after its back-off
    assert (peak[0], len(asked)) == (3, 25)  # 2, and one more while one slept
    assert retried > 12  # meanwhile the other items went on (12 pairs, 2 requests each, in about a second)
    assert rows(sample, "select count(*) from judgments where status = 'ok'") == [(12,)]


def test_on_a_slow_server_each_item_finishes_before_later_items_begin(sample):
    """With one slot and many items in flight, a free slot goes to an item's confidence request before another item's
    label (peras/llm/priority.py): items finish one by one from the start. First-come-first-served asked every
    label first, so on the embedded model no judgment was done (or committed) for the first 256 labels."""
    with FakeOpenAI(instant) as server:
        settings = use(sample, server)
        settings.concurrency = 1
        judge(collection="sample", personalities=["default"], cot=[False], limit_pairs=12, settings=settings)
        purposes = [
            "confidence" if "relevance score is" in str(r.body["messages"]) else "label" for r in server.chat_requests
        ]
    # as many items are worked on as requests may be in flight (tasks/engine/workers.py, Workers): each item's
    # confidence follows its label (with 256 items at once, a freed slot went to a waiting label before the item's
    # confidence was asked, and the priority made it two labels, then both confidences)
    assert purposes == ["label", "confidence"] * 12
    assert rows(sample, "select count(*) from judgments where status = 'ok'") == [(12,)]
