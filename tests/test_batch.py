"""Batch mode end to end: the judge flow through the scripted Batch API (support/fake_batch.py), against online."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import duckdb
import pytest

from flows.judge import judge
from support.fake_batch import BatchScript, FakeBatchAPI
from support.fake_openai import FakeOpenAI, Fault, instant
from tests.helpers import run_cli, snapshot

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.integration

# What a request row is, apart from when and by which run it was stored and how long it took.
REQUEST_COLUMNS = (
    "request_id, model, purpose, params::varchar, messages::varchar, raw_text, attempts, attempt_texts::varchar,"
    " attempt_params::varchar, parsed_value, parsed_confidence, parse_status, parse_reason, prompt_tokens,"
    " completion_tokens, http_requests"
)
JUDGMENT_COLUMNS = "query_id, doc_id, personality, cot, confidence_method, label, confidence, status, label_request_id,"
JUDGMENT_COLUMNS += " confidence_request_id"
ONE_STEP = BatchScript(steps=("validating",))  # the first look finds it completed


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


def batch_settings(settings, server: FakeBatchAPI):
    settings.base_urls = [server.base_url]
    settings.model = "fake-model"
    settings.mode = "batch"
    settings.batch_poll_s = 0.01
    return settings


def judge_sample(settings, **more):
    return judge(collection="sample", personalities=["HA"], cot=[False], run_name="r", settings=settings, **more)


def test_a_batch_run_equals_the_online_run_request_for_request(sample, tmp_path):
    online = sample.model_copy(update={"warehouse": tmp_path / "online.duckdb", "shards_dir": tmp_path / "online"})
    online.warehouse.write_bytes(sample.warehouse.read_bytes())
    with FakeOpenAI(instant) as server:
        online.base_urls, online.model = [server.base_url], "fake-model"
        judge_sample(online)
        online_bodies = sorted(json.dumps(r.body, sort_keys=True) for r in server.chat_requests)
    with FakeBatchAPI(instant, scripts=[ONE_STEP]) as server:
        settings = batch_settings(sample, server)
        first = judge_sample(settings)
        assert (first["n_judged_now"], first["n_waiting"], first["batches"]) == (0, 40, ["batch_1"])
        second = judge_sample(settings)  # labels collected; the confidence requests are round 2
        assert (second["n_judged_now"], second["n_waiting"], second["batches"]) == (0, 40, ["batch_2"])
        third = judge_sample(settings)
        assert (third["n_judged_now"], third.get("n_waiting"), third["n_failures"]) == (40, None, 0)
        assert len(server.chat_requests) == 0
        assert len(server.submitted_ids) == 80 == len(set(server.submitted_ids))
        bodies = [line["body"] for batch in server.batches.values() for line in batch["_lines"]]
    assert rows(settings, f"select {REQUEST_COLUMNS} from llm_requests order by 1") == rows(
        online, f"select {REQUEST_COLUMNS} from llm_requests order by 1"
    )
    assert rows(settings, f"select {JUDGMENT_COLUMNS} from judgments order by all") == rows(
        online, f"select {JUDGMENT_COLUMNS} from judgments order by all"
    )
    assert rows(settings, "select status from judge_runs") == [("published",)]
    assert rows(settings, "select round, status, n_requests, collected_at is not null from llm_batches order by 1") == [
        (1, "completed", 40, True),
        (2, "completed", 40, True),
    ]
    # A batch line's body is exactly what online mode sent.
    assert sorted(json.dumps(body, sort_keys=True) for body in bodies) == online_bodies


def test_an_expired_batch_keeps_what_it_answered_and_the_rest_goes_in_the_next_round(sample):
    expiring = BatchScript(steps=("validating",), end="expired", answer_share=0.5)
    with FakeBatchAPI(instant, scripts=[expiring, ONE_STEP]) as server:
        settings = batch_settings(sample, server)
        judge_sample(settings)
        second = judge_sample(settings)
        labels = server.submitted_ids[:40]
        round_two = server.submitted_ids[40:]
        # The unanswered half of round 1 (input order: the last 20) is asked again, beside the answered half's
        # confidence requests.
        assert (second["n_waiting"], len(round_two)) == (40, 40)
        assert sorted(set(round_two) & set(labels)) == sorted(labels[20:])
        done = judge_sample(settings, wait=True)
        assert (done["n_failures"], done.get("n_waiting")) == (0, None)
        counts = Counter(server.submitted_ids)
    assert sorted(custom for custom, n in counts.items() if n > 1) == sorted(labels[20:])
    assert set(counts.values()) == {1, 2}
    assert rows(settings, "select count(*), count(*) filter (where status = 'ok') from judgments") == [(40, 40)]
    assert rows(settings, "select round, status, n_requests from llm_batches order by 1") == [
        (1, "expired", 40),
        (2, "completed", 40),
        (3, "completed", 20),
    ]
    assert rows(settings, "select error_code, count(*) from llm_batch_lines where status_code is null group by 1") == [
        ("batch_expired", 20)
    ]


def test_an_unreadable_answer_and_a_failed_line_are_asked_again_in_the_next_round(sample):
    seen: Counter[str] = Counter()
    passages = []

    def respond(request):
        content = request["messages"][-1]["content"]
        seen[content] += 1
        if "relevance score is" in content:
            return instant(request)
        passages.append(content)
        if len(set(passages)) == 1 and seen[content] == 1:
            return "I cannot judge that."  # the first pair's label: unreadable once
        if len(set(passages)) == 2 and seen[content] == 1:
            return Fault(500)  # the second pair's label: a failed line once
        return instant(request)

    with FakeBatchAPI(respond, scripts=[ONE_STEP]) as server:
        settings = batch_settings(sample, server)
        done = judge_sample(settings, wait=True, limit_pairs=2)
        custom_ids = server.submitted_ids
    assert done["n_failures"] == 0
    unreadable = rows(
        settings, "select request_id, attempt_texts, attempt_params->1->>'seed', http_requests"
        " from llm_requests where purpose = 'label' and attempts = 2"
    )  # fmt: skip
    assert len(unreadable) == 1
    request_id, texts, seed, http = unreadable[0]
    assert (json.loads(texts)[0], len(json.loads(texts)), seed, http) == ("I cannot judge that.", 2, "1000", 2)
    assert f"{request_id}-r1" in custom_ids
    # The other label: one attempt, two lines run (the failed one, then its answer).
    assert rows(settings, "select attempts, http_requests from llm_requests where purpose = 'label' order by 1") == [
        (1, 2),
        (2, 2),
    ]
    assert rows(settings, "select status_code, count(*) from llm_batch_lines group by 1 order by 1") == [
        (200, 5),
        (500, 1),
    ]
    assert len(custom_ids) == 6


def test_two_runs_needing_the_same_requests_share_their_batches(sample):
    two_looks = BatchScript(steps=("validating", "in_progress"))  # still live when run b looks first
    with FakeBatchAPI(instant, scripts=[two_looks]) as server:
        settings = batch_settings(sample, server)
        first = judge(collection="sample", personalities=["HA"], cot=[False], run_name="a", settings=settings)
        second = judge(collection="sample", personalities=["HA"], cot=[False], run_name="b", settings=settings)
        assert (first["batches"], second["batches"], second["n_waiting"]) == (["batch_1"], [], 40)
        judge(collection="sample", personalities=["HA"], cot=[False], run_name="a", settings=settings, wait=True)
        judge(collection="sample", personalities=["HA"], cot=[False], run_name="b", settings=settings, wait=True)
        assert len(server.submitted_ids) == 80 == len(set(server.submitted_ids))
    assert rows(settings, "select run_name, status from judge_runs order by 1") == [
        ("a", "published"),
        ("b", "published"),
    ]
    assert rows(settings, "select count(*), count(distinct request_id) from llm_requests") == [(80, 80)]


def judge_command(settings, *more: str) -> list[str]:
    return ["judge", "sample", "--personality", "HA", "--cot", "without", "--mode", "batch", "--model", "fake-model",
            "--run-name", "r", "--warehouse", str(settings.warehouse), *more]  # fmt: skip


def stand_in(source: str, target: Path) -> None:
    command = [sys.executable, "-m", "support.stand_in_run_batch", "-i", source, "-o", str(target)]
    subprocess.run([*command, "--model", "fake-model"], check=True, cwd=ROOT)


def test_export_then_import_rounds_for_vllms_runner_judge_the_run(sample, tmp_path, capsys):
    warehouse = ["--warehouse", str(sample.warehouse)]
    for round_ in (1, 2):
        asked = run_cli(capsys, *judge_command(sample))
        assert asked.exit_code == 0, asked.err
        assert asked.out.startswith("r: 0 judgments made now, 40 wait for batch answers; submitted now: file-")
        assert "Next: peras batch export r --output DIR" in asked.out
        exported = run_cli(capsys, "batch", "export", "r", "--output", str(tmp_path / f"in{round_}"), *warehouse)
        files = exported.out.split()
        assert (exported.exit_code, len(files)) == (0, 1)
        stand_in(files[0], tmp_path / f"out{round_}.jsonl")
        imported = run_cli(capsys, "batch", "import", "r", str(tmp_path / f"out{round_}.jsonl"), *warehouse)
        assert imported.out == "r: 40 answers imported into 1 batch(es) (0 lines imported before skipped)\n"
    done = run_cli(capsys, *judge_command(sample))
    assert done.exit_code == 0, done.err
    judged = (
        "r: 40 judgments (40 new; 0 requests sent, 40 reused), 0 parse failures; model fake-model via vllm-run-batch"
    )
    assert done.out == judged + "\n"  # the labels were journaled (and are reused) when round 2 was planned
    before = snapshot(sample.warehouse)
    again = run_cli(capsys, "batch", "import", "r", str(tmp_path / "out2.jsonl"), *warehouse)
    assert again.out == "r: 0 answers imported into 0 batch(es) (40 lines imported before skipped)\n"
    assert snapshot(sample.warehouse) == before
    assert rows(sample, "select status from judge_runs") == [("published",)]
    assert rows(sample, "select count(*) from judgments where status = 'ok'") == [(40,)]
    status = run_cli(capsys, "batch", "status", "r", *warehouse)
    assert [line.split()[1:6] for line in status.out.splitlines()[1:]] == [
        ["1", "completed", "40", "40", "0"],
        ["2", "completed", "40", "40", "0"],
    ]


def test_bad_output_files_are_refused_with_file_and_line_and_nothing_is_written(sample, tmp_path, capsys):
    warehouse = ["--warehouse", str(sample.warehouse)]
    assert run_cli(capsys, *judge_command(sample)).exit_code == 0
    (source,) = run_cli(capsys, "batch", "export", "r", "--output", str(tmp_path / "in"), *warehouse).out.split()
    good = tmp_path / "good.jsonl"
    stand_in(source, good)
    lines = good.read_text().splitlines()
    first = json.loads(lines[0])
    cases = {
        "foreign.jsonl": (
            Path(source).read_text(),
            "foreign.jsonl:1: not a batch output line (no custom_id and response)",
        ),
        "truncated.jsonl": ("\n".join(lines[:-1] + [lines[-1][:40]]) + "\n", "truncated.jsonl:40: not a JSON line"),
        "unknown.jsonl": (
            json.dumps(first | {"custom_id": "abc"}) + "\n",
            "unknown.jsonl:1: custom_id 'abc' is no request run r waits for; nothing was imported",
        ),
        "twice.jsonl": (
            lines[0] + "\n" + lines[0] + "\n",
            f"twice.jsonl:2: custom_id '{first['custom_id']}' is answered twice (first at {tmp_path}/twice.jsonl:1)",
        ),
        "model.jsonl": (
            json.dumps(first | {"response": first["response"] | {"body": first["response"]["body"] | {"model": "x"}}})
            + "\n",
            "model.jsonl:1: answered by model 'x', run r asks 'fake-model'; nothing was imported",
        ),
    }
    before = snapshot(sample.warehouse)
    for name, (text, message) in cases.items():
        (tmp_path / name).write_text(text)
        result = run_cli(capsys, "batch", "import", "r", str(tmp_path / name), *warehouse)
        assert result.exit_code == 1, name
        assert result.err.startswith(f"error: {tmp_path / name.split('.')[0]}.jsonl:"), result.err
        assert message in result.err, result.err
        assert snapshot(sample.warehouse) == before, name
    # The same requests answered online meanwhile (another run): the import would replace answers, and is refused.
    with FakeOpenAI(instant) as server:
        online = sample.model_copy(update={"base_urls": [server.base_url], "model": "fake-model", "mode": "online"})
        judge(collection="sample", personalities=["HA"], cot=[False], run_name="online", settings=online)
    before = snapshot(sample.warehouse)
    result = run_cli(capsys, "batch", "import", "r", str(good), *warehouse)
    assert result.exit_code == 1
    assert result.err == (
        f"error: {good}:1: custom_id '{first['custom_id']}': its request already has an answer stored;"
        " nothing was imported\n"
    )
    assert snapshot(sample.warehouse) == before


def test_killed_between_submit_and_collect_a_resume_submits_nothing_twice(sample):
    slow = BatchScript(steps=("validating",) + ("in_progress",) * 40)
    with FakeBatchAPI(instant, scripts=[slow, ONE_STEP]) as server:
        env = {**os.environ, "PERAS_BATCH_POLL_S": "0.05"}
        command = [sys.executable, "-m", "cli.main", *judge_command(sample, "--base-url", server.base_url, "--wait")]
        process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # killed while it polls the submitted batch
            looks = [r for r in server.requests if r.method == "GET" and r.path.endswith("/batches/batch_1")]
            if len(looks) >= 3:
                break
            time.sleep(0.02)
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        assert len(looks) >= 3 and len(server.submitted_ids) == 40
        assert rows(sample, "select batch_id, status, collected_at is null from llm_batches") == [
            ("batch_1", "in_progress", True)
        ]
        settings = batch_settings(sample, server)
        done = judge_sample(settings, wait=True)
        assert (done["n_judged_now"], done["n_failures"]) == (40, 0)
        assert len(server.submitted_ids) == 80 == len(set(server.submitted_ids))
    assert rows(settings, "select count(*), count(distinct custom_id) from llm_batch_lines") == [(80, 80)]
    assert rows(settings, "select count(*), count(distinct request_id) from llm_requests") == [(80, 80)]
    assert rows(settings, "select status from judge_runs") == [("published",)]


def test_cancel_keeps_what_was_answered_and_collect_and_status_show_it(sample, capsys):
    cancelled_half = BatchScript(steps=("validating", "in_progress", "in_progress"), answer_share=0.5)
    warehouse = ["--warehouse", str(sample.warehouse)]
    with FakeBatchAPI(instant, scripts=[cancelled_half, ONE_STEP]) as server:
        settings = batch_settings(sample, server)
        judge_sample(settings)
        cancel = run_cli(capsys, "batch", "cancel", "r", *warehouse)
        assert (cancel.exit_code, cancel.out) == (0, "r: batch_1 cancelling\n")
        collect = run_cli(capsys, "batch", "collect", "r", *warehouse)
        assert collect.exit_code == 0, collect.err
        assert [line.split()[:6] for line in collect.out.splitlines()] == [
            ["batch", "round", "status", "requests", "answered", "failed"],
            ["batch_1", "1", "cancelled", "40", "20", "20"],
        ]
        assert run_cli(capsys, "batch", "cancel", "r", *warehouse).out == "r: no live batch to cancel\n"
        done = judge_sample(settings, wait=True)
        assert (done["n_judged_now"], done["n_failures"]) == (40, 0)
        assert len(server.submitted_ids) == 100  # the 20 labels the cancelled batch did not run, asked again
    capsys.readouterr()  # the progress lines of --wait
    unknown = run_cli(capsys, "batch", "status", "nope", *warehouse)
    assert (unknown.exit_code, unknown.err) == (
        2,
        "error: no run named 'nope'; `peras runs list` shows the runs\n",
    )


# Every LLM stage asks in batch mode through the same flow body (tasks/engine/running.py run_stage): a batch run of
# a stage equals its online run against the same scripted answers, request for request and answer for answer.


def stage_rows(settings, table: str, run_id_column: str, time_column: str = "judged_at") -> list[tuple]:
    return rows(settings, f"select * exclude ({run_id_column}, {time_column}) from {table} order by all")


def online_copy(settings, tmp_path):
    online = settings.model_copy(update={"warehouse": tmp_path / "online.duckdb", "shards_dir": tmp_path / "online"})
    online.warehouse.write_bytes(settings.warehouse.read_bytes())
    return online


def test_pairwise_in_batch_mode_equals_pairwise_online(sample, tmp_path, capsys):
    from tests.test_pairwise_flow import truthful

    online = online_copy(sample, tmp_path)
    asked = ["pairwise", "sample", "--pairs-per-topic", "2", "--personality", "default", "--model", "fake-model"]
    with FakeOpenAI(truthful) as server:
        done = run_cli(capsys, *asked, "--base-url", server.base_url, "--warehouse", str(online.warehouse))
        assert done.exit_code == 0, done.err
    with FakeBatchAPI(truthful, scripts=[ONE_STEP]) as server:
        batch = [*asked, "--base-url", server.base_url, "--warehouse", str(sample.warehouse), "--mode", "batch"]
        first = run_cli(capsys, *batch)
        assert first.exit_code == 0, first.err
        name = first.out.split(":", 1)[0]
        assert first.out == (
            f"{name}: 0 answers made now, 20 wait for batch answers; submitted now: batch_1. Next: this command"
            f" again (or with --wait) collects and goes on; peras batch status {name}\n"
        )
        assert rows(sample, "select status from pairwise_runs") == [("waiting",)]
        status = run_cli(capsys, "batch", "status", name, "--warehouse", str(sample.warehouse))
        assert status.exit_code == 0, status.err
        assert status.out.splitlines()[1].split()[:4] == ["batch_1", "1", "validating", "20"]
        second = run_cli(capsys, *batch, "--wait")
        assert second.exit_code == 0, second.err
        assert len(server.chat_requests) == 0
        assert len(server.submitted_ids) == 20 == len(set(server.submitted_ids))
    assert second.out.splitlines()[-1] == done.out.splitlines()[-1].replace(
        "20 requests sent", "0 requests sent"
    )  # answered from the batch lines: 20 new, none sent online
    assert rows(sample, f"select {REQUEST_COLUMNS} from llm_requests order by 1") == rows(
        online, f"select {REQUEST_COLUMNS} from llm_requests order by 1"
    )
    assert stage_rows(sample, "pairwise_answers", "pairwise_run_id") == stage_rows(
        online, "pairwise_answers", "pairwise_run_id"
    )
    assert rows(sample, "select status from pairwise_runs") == [("published",)]


def test_a_personas_check_in_batch_mode_equals_the_check_online(sample, tmp_path):
    from flows.personas import personas_check
    from tests.test_personas import trait_like

    online = online_copy(sample, tmp_path)
    with FakeOpenAI(trait_like) as server:
        online.base_urls, online.model = [server.base_url], "fake-model"
        checked = personas_check(samples=2, items_per_domain=1, settings=online)
    with FakeBatchAPI(trait_like, scripts=[ONE_STEP]) as server:
        batch = batch_settings(sample, server)
        waiting = personas_check(samples=2, items_per_domain=1, settings=batch)
        assert (waiting["n_judged_now"], waiting["n_waiting"], waiting["batches"]) == (0, 165, ["batch_1"])
        batch.batch_wait = True
        done = personas_check(samples=2, items_per_domain=1, settings=batch)
        assert len(server.submitted_ids) == 165 == len(set(server.submitted_ids))
    assert (done["n_judged_now"], done["n_failures"]) == (checked["n_judged_now"], checked["n_failures"]) == (165, 0)
    assert rows(sample, f"select {REQUEST_COLUMNS} from llm_requests order by 1") == rows(
        online, f"select {REQUEST_COLUMNS} from llm_requests order by 1"
    )
    assert stage_rows(sample, "persona_answers", "check_run_id", "answered_at") == stage_rows(
        online, "persona_answers", "check_run_id", "answered_at"
    )
    assert rows(sample, "select status from persona_check_runs") == [("published",)]


def test_killed_between_the_providers_create_and_its_record_a_resume_adopts_the_batch(sample):
    with FakeBatchAPI(instant, scripts=[ONE_STEP]) as server:
        command = [sys.executable, "-m", "cli.main", *judge_command(sample, "--base-url", server.base_url)]
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
        # kill -9 once the provider has created the batch, before its answer reaches peras (so before the record)
        server.on_create = lambda batch_id: os.kill(process.pid, signal.SIGKILL)
        assert process.wait(timeout=120) == -signal.SIGKILL
        server.on_create = None
        assert (server.creates, len(server.submitted_ids)) == (1, 40)
        # What peras knows: a submission recorded before the create, not yet known to be created.
        assert rows(sample, "select batch_id like 'submitting-%', status, round, n_requests from llm_batches") == [
            (True, "submitting", 1, 40)
        ]
        settings = batch_settings(sample, server)
        done = judge_sample(settings, wait=True)
        assert (done["n_judged_now"], done["n_failures"]) == (40, 0)
        # Round 1 was adopted (found by its token in the batch's metadata), not created again: one create per round.
        assert server.creates == 2
        assert len(server.submitted_ids) == 80 == len(set(server.submitted_ids))
        lists = [r for r in server.requests if r.method == "GET" and r.path.split("?")[0].endswith("/v1/batches")]
        assert len(lists) == 1
    assert rows(settings, "select batch_id, round, status, n_requests from llm_batches order by round") == [
        ("batch_1", 1, "completed", 40),
        ("batch_2", 2, "completed", 40),
    ]
    assert rows(settings, "select distinct batch_id from llm_batch_requests order by 1") == [("batch_1",), ("batch_2",)]
    assert rows(settings, "select status from judge_runs") == [("published",)]


def test_the_request_budget_counts_batch_lines_and_a_round_never_submits_more_than_is_left(sample, capsys, monkeypatch):
    monkeypatch.setenv("PERAS_BATCH_POLL_S", "0.01")  # --wait looks again at once (the default waits 60 s a look)
    with FakeBatchAPI(instant, scripts=[ONE_STEP]) as server:
        asked = judge_command(sample, "--base-url", server.base_url, "--request-budget", "30")
        first = run_cli(capsys, *asked)
        assert first.exit_code == 0, first.err
        assert len(server.submitted_ids) == 30  # of the 40 labels round 1 needs
        held = "request budget 30 (0 spent): 30 lines submitted, 10 held back (raise --request-budget to submit them)"
        assert f"submitted now: batch_1. {held}. Next:" in first.out
        # Round 2: the 30 lines are spent, nothing is left; the run stops with one line, nothing more submitted.
        second = run_cli(capsys, *asked)
        assert second.exit_code == 1
        assert second.err == (
            "error: request budget of 30 reached (30 requests and batch lines spent, 40 lines wait);"
            " raise --request-budget to go on\n"
        )
        assert len(server.submitted_ids) == 30
        # A larger budget goes on: 30 confidences + 10 labels, then the last 10 confidences; 80 lines in all.
        more = judge_command(sample, "--base-url", server.base_url, "--request-budget", "80", "--wait")
        done = run_cli(capsys, *more)
        assert done.exit_code == 0, done.err
        assert done.out.startswith("r: 40 judgments (")
        assert len(server.submitted_ids) == 80 == len(set(server.submitted_ids))
    assert rows(sample, "select round, n_requests from llm_batches order by 1") == [(1, 30), (2, 40), (3, 10)]
    assert rows(sample, "select status from judge_runs") == [("published",)]


def test_the_batch_poll_flow_carries_batch_runs_of_two_stages_to_the_end_unattended(sample):
    from flows.batch_poll import batch_poll
    from flows.pairwise import pairwise
    from tests.test_pairwise_flow import truthful

    def respond(request):
        content = request["messages"][-1]["content"]
        pairwise_asked = "[The Start of Passage" in content or '"selected_output"' in content
        return truthful(request) if pairwise_asked else instant(request)

    with FakeBatchAPI(respond, scripts=[ONE_STEP]) as server:
        settings = batch_settings(sample, server)
        assert judge_sample(settings)["batches"] == ["batch_1"]
        asked = pairwise(collection="sample", pairs_per_topic=2, personalities=["default"], settings=settings)
        assert (asked["n_waiting"], asked["batches"]) == (20, ["batch_2"])
        # The poller's own settings (a worker's environment): no endpoint, online; each run's come from the warehouse.
        poller = settings.model_copy(update={"base_urls": [], "model": None, "mode": "online"})
        first = batch_poll(settings=poller)
        assert (first["n_polled"], first["n_called"]) == (1, 2)  # batch_1 was collected by the pairwise call
        assert sorted(first["runs"]) == [
            "judge r: 40 items wait; submitted batch_3",
            "pairwise sample-pairwise-fake-model: done (20 answered now)",
        ]
        assert rows(settings, "select status from pairwise_runs") == [("published",)]
        second = batch_poll(settings=poller)
        # batch_3 ended at the pairwise call's collection (every call collects its model's live batches), after
        # the judge's call: the judge is called again now, and ends.
        assert (second["n_polled"], second["runs"]) == (0, ["judge r: done (40 answered now)"])
        third = batch_poll(settings=poller)
        assert (third["n_polled"], third["runs"]) == (0, [])
        assert server.creates == 3
        assert len(server.chat_requests) == 0
    assert rows(settings, "select status from judge_runs") == [("published",)]
    assert rows(settings, "select count(*) from judgments where status = 'ok'") == [(40,)]
    assert rows(settings, "select flow_name, parameters->>'run_name' from llm_batch_calls order by 1") == [
        ("judge", "r"),
        ("pairwise", None),
    ]
