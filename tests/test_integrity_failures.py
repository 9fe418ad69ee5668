"""Issue 14, nothing destroyed: changed texts, dying runs, bounded waits and credentials, through the real CLI.

Shards, the answer cache, the budget and failed answers: tests/test_integrity.py.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from peras.paths import SAMPLE_DIR
from support.fake_openai import FakeOpenAI, Fault, Reply, instant
from tests.helpers import run_cli
from tests.test_integrity import judge_cli, not_derivable, rows


@pytest.fixture
def sample(settings, tmp_path, monkeypatch, ingested):
    """The shipped sample in a fresh warehouse; slots kept in tmp_path."""
    monkeypatch.setenv("PERAS_ENDPOINT_SLOTS_DIR", str(tmp_path / "slots"))
    ingested("sample", settings)
    return settings


# 6. A changed passage makes its judgments stale ------------------------------------------------------------------


def user_files(directory: Path) -> dict[str, Path]:
    """The shipped sample copied as a user's own files."""
    directory.mkdir(exist_ok=True)
    names = {"qrels": "qrels.txt", "queries": "queries.tsv", "passages": "passages.jsonl"}
    return {role: Path(shutil.copy(SAMPLE_DIR / name, directory / name)) for role, name in names.items()}


def ingest_cli(capsys, warehouse: Path, files: dict[str, Path]):
    return run_cli(
        capsys,
        "ingest",
        "--warehouse",
        str(warehouse),
        "--name",
        "mine",
        "--qrels",
        str(files["qrels"]),
        "--queries",
        str(files["queries"]),
        "--passages",
        str(files["passages"]),
    )


KEPT = (
    "run_id, query_id, doc_id, personality, cot, confidence_method, label, confidence, status, label_request_id,"
    " confidence_request_id, text_sha"
)
NEW_TEXT = "Boil the egg for exactly four minutes and forty seconds; the yolk stays runny."


@pytest.mark.integration
def test_a_changed_passage_is_not_scored_and_only_its_pairs_are_asked_again(settings, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PERAS_ENDPOINT_SLOTS_DIR", str(tmp_path / "slots"))
    warehouse = settings.warehouse
    files = user_files(tmp_path / "mine")
    assert ingest_cli(capsys, warehouse, files).exit_code == 0
    args = (
        "judge",
        "mine",
        "--warehouse",
        str(warehouse),
        "--run-name",
        "mine",
        "--personality",
        "default",
        "--personality",
        "HA",
        "--cot",
        "without",
    )
    with FakeOpenAI(instant) as server:
        url = ("--base-url", server.base_url, "--model", "fake-model")
        first = run_cli(capsys, *args, *url)
        assert first.exit_code == 0, first.err
        assert len(server.chat_requests) == 40 * 2 * 2
        before = rows(warehouse, f"select {KEPT} from judgments where doc_id = 'e1' order by all")
        scored = "select count(*), count(*) filter (where doc_id = 'e1') from stg_judgment_facts"
        assert rows(warehouse, scored) == [(80, 2)]

        lines = [json.loads(line) for line in files["passages"].read_text().splitlines()]
        lines[0] = {"docid": "e1", "doc": NEW_TEXT}
        files["passages"].write_text("".join(json.dumps(line) + "\n" for line in lines))
        assert ingest_cli(capsys, warehouse, files).exit_code == 0
        assert rows(warehouse, scored) == [(78, 0)]  # the stale judgments are no longer scored
        assert rows(warehouse, "select sum(n_scored) from metrics_summary where run_name = 'mine'") == [(78,)]

        server.reset()
        again = run_cli(capsys, *args, *url)
        assert again.exit_code == 0, again.err
        assert again.out.startswith("mine: 80 judgments (2 new; 4 requests sent, 0 reused)")
        assert len(server.chat_requests) == 4
        assert all(NEW_TEXT in str(r.body["messages"]) for r in server.chat_requests)
    assert rows(warehouse, scored) == [(80, 2)]
    assert rows(warehouse, "select count(*) from judgments") == [(80,)]
    # The old judgments, as they were, are kept
    assert rows(warehouse, f"select {KEPT} from judgment_history order by all") == before
    assert rows(warehouse, "select why from judgment_history") == [("text changed",)] * 2
    assert rows(
        warehouse,
        "select count(*) from judgments j join judgment_history h using (run_id, query_id,"
        " doc_id, personality, cot, confidence_method) where j.text_sha = h.text_sha",
    ) == [(0,)]
    assert not_derivable(warehouse) == []


# 8. Runs that die are marked -------------------------------------------------------------------------------------


ONE = ("--run-name", "dying", "--personality", "default", "--cot", "without", "--limit-pairs", "2")


@pytest.mark.integration
@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        # the key is refused: every request would be, the run stops at once
        (Fault(401, body={"error": {"message": "invalid api key"}}), "HTTP 401: invalid api key"),
        # the server drops every connection: retried, then given up
        (Fault(drop=True), "gave up after 2 attempts"),
    ],
)
def test_a_run_the_server_kills_is_marked_failed_with_the_reason(sample, capsys, monkeypatch, fault, reason):
    monkeypatch.setenv("PERAS_MAX_RETRIES", "1")
    with FakeOpenAI(lambda request: fault) as server:
        result = judge_cli(capsys, sample.warehouse, server, *ONE)
    assert result.exit_code == 1
    assert len(result.err.strip().splitlines()) == 1 and reason in result.err, result.err
    status, status_reason = rows(sample.warehouse, "select status, status_reason from judge_runs")[0]
    assert status == "failed"
    assert status_reason.startswith("BackendError: ") and reason in status_reason


@pytest.mark.integration
def test_a_rerun_after_kill_9_starts_at_once(sample, tmp_path):
    """The killed run held every per-URL slot; the kernel frees them with the process, so the rerun sends at once."""
    state = {"hang": True}

    def respond(request):
        return Reply(instant(request), delay_s=3600.0 if state["hang"] else 0.0)

    env = {
        **os.environ,
        "PERAS_WAREHOUSE": str(sample.warehouse),
        "PERAS_CONCURRENCY": "2",
        "PERAS_ENDPOINT_SLOTS_DIR": str(tmp_path / "slots"),
    }
    with FakeOpenAI(respond) as server:
        command = [
            sys.executable,
            "-m",
            "cli.main",
            "judge",
            "sample",
            "--base-url",
            server.base_url,
            "--model",
            "fake-model",
            *ONE,
        ]
        killed = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while len(server.chat_requests) < 2 and time.monotonic() < deadline:  # both slots held
            time.sleep(0.05)
        assert len(server.chat_requests) == 2
        os.kill(killed.pid, signal.SIGKILL)
        killed.communicate()
        state["hang"] = False
        started = time.monotonic()
        rerun = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        while len(server.chat_requests) < 3 and time.monotonic() - started < 120:
            time.sleep(0.02)
        first_request_s = time.monotonic() - started
        out, err = rerun.communicate(timeout=120)
    assert rerun.returncode == 0, err
    assert first_request_s < 20, f"the rerun's first request came {first_request_s:.1f} s after its start"
    assert out.startswith("dying: 2 judgments (2 new; 4 requests sent, 0 reused)")
    assert rows(sample.warehouse, "select status, status_reason from judge_runs") == [("published", None)]


# 9. Waits are bounded and said -----------------------------------------------------------------------------------


@pytest.mark.integration
def test_a_retry_after_past_the_deadline_fails_at_once_saying_why(sample, capsys, monkeypatch):
    monkeypatch.setenv("PERAS_REQUEST_DEADLINE_S", "5")
    with FakeOpenAI(lambda request: Fault(429, retry_after=100000)) as server:
        started = time.monotonic()
        result = judge_cli(capsys, sample.warehouse, server, *ONE)
        took = time.monotonic() - started
    assert result.exit_code == 1
    assert took < 30
    assert result.err.splitlines() == [
        f"error: {server.base_url}: HTTP 429: fake fault 429; gave up after 1 attempt: the server asked to retry"
        " after 100,000 s (Retry-After), past the 5 s a request may take (PERAS_REQUEST_DEADLINE_S)"
    ]
    assert len(server.chat_requests) == 2  # the two pairs' label requests, neither asked again


@pytest.mark.integration
def test_a_long_wait_is_announced_on_stderr(sample, capsys, monkeypatch):
    monkeypatch.setenv("PERAS_REQUEST_DEADLINE_S", "60")
    replies = iter([Fault(429, retry_after=11)])

    def respond(request):
        return next(replies, None) or instant(request)

    with FakeOpenAI(respond) as server:
        result = judge_cli(capsys, sample.warehouse, server, *ONE)
    assert result.exit_code == 0, result.err
    assert (
        f"{server.base_url}: HTTP 429: fake fault 429; the server asked to retry after 11 s (Retry-After):"
        " waiting 11 s before retry 1" in result.err.splitlines()
    )


@pytest.fixture
def silent_port():
    """A server that accepts connections and never answers."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    listener.close()


@pytest.mark.integration
def test_a_silent_server_ends_with_one_line_in_bounded_time(sample, capsys, monkeypatch, silent_port):
    monkeypatch.setenv("PERAS_REQUEST_TIMEOUT_S", "1")
    monkeypatch.setenv("PERAS_REQUEST_DEADLINE_S", "3")
    url = f"http://127.0.0.1:{silent_port}/v1"
    started = time.monotonic()
    result = run_cli(
        capsys,
        "judge",
        "sample",
        "--warehouse",
        str(sample.warehouse),
        "--base-url",
        url,
        "--model",
        "fake-model",
        *ONE,
    )
    assert time.monotonic() - started < 30
    assert result.exit_code == 1
    assert result.err.splitlines() == [
        f"error: cannot reach {url}: no answer within 1 s; is the server running? start it with"
        " `vllm serve fake-model` or set --base-url"
    ]


@pytest.mark.integration
def test_a_server_that_never_answers_a_request_ends_with_one_line_in_bounded_time(sample, capsys, monkeypatch):
    monkeypatch.setenv("PERAS_REQUEST_TIMEOUT_S", "1")
    monkeypatch.setenv("PERAS_REQUEST_DEADLINE_S", "3")
    with FakeOpenAI(lambda request: Reply("1", delay_s=3600)) as server:
        started = time.monotonic()
        result = judge_cli(capsys, sample.warehouse, server, *ONE)
        took = time.monotonic() - started
    assert took < 30
    assert result.exit_code == 1
    # Asked at 0 s and 1-2 s (after a backoff), each timing out after 1 s: a third try would end past 3 s.
    assert len(result.err.splitlines()) == 1
    assert re.fullmatch(
        rf"error: {re.escape(server.base_url)}: no answer within 1 s; gave up after 2 attempts: the next retry"
        r" \(in [01] s\) would pass the 3 s a request may take \(PERAS_REQUEST_DEADLINE_S\)\n",
        result.err,
    ), result.err
    assert rows(sample.warehouse, "select status from judge_runs") == [("failed",)]


# 13. A key in the base URL never leaves the process ---------------------------------------------------------------


SECRET = "s3cr3t-k3y-4711"


def flow_runs_mentioning(text: str) -> tuple[int, list[str]]:
    """How many judge flow runs the Prefect server holds, and which of their parameters or logs mention `text`."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName, LogFilter, LogFilterFlowRunId

    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(any_=["judge"])))
        found = [f"parameters of {run.name}" for run in runs if text in json.dumps(run.parameters, default=str)]
        logs = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[run.id for run in runs])))
        found += [f"log: {log.message}" for log in logs if text in log.message]
    return len(runs), found


@pytest.mark.integration
def test_a_key_in_the_base_url_reaches_no_warehouse_parameter_or_log(sample, capsys):
    with FakeOpenAI(instant) as server:
        url = server.base_url.replace("http://", f"http://peras:{SECRET}@")
        ok = run_cli(
            capsys,
            "judge",
            "sample",
            "--warehouse",
            str(sample.warehouse),
            "--base-url",
            url,
            "--model",
            "fake-model",
            *ONE,
        )
        assert ok.exit_code == 0, ok.err
        server.responder = lambda request: Fault(401, body={"error": {"message": "invalid api key"}})
        refused = run_cli(
            capsys,
            "judge",
            "sample",
            "--warehouse",
            str(sample.warehouse),
            "--base-url",
            url,
            "--model",
            "fake-model",
            "--run-name",
            "refused",
            "--personality",
            "HA",
        )
        assert refused.exit_code == 1
    port = server.base_url.rsplit(":", 1)[1].split("/")[0]
    unreachable = run_cli(
        capsys,
        "judge",
        "sample",
        "--warehouse",
        str(sample.warehouse),
        "--base-url",
        url,
        "--model",
        "fake-model",
        "--run-name",
        "unreachable",
    )
    assert unreachable.exit_code == 1
    assert unreachable.err.startswith(f"error: cannot reach http://127.0.0.1:{port}/v1:"), unreachable.err
    for result in (ok, refused, unreachable):
        assert SECRET not in result.out + result.err
    assert f"http://127.0.0.1:{port}/v1 rejected the request: HTTP 401" in refused.err
    assert rows(sample.warehouse, "select run_name, status from judge_runs order by 1") == [
        ("dying", "published"),
        ("refused", "failed"),
    ]
    for path in sample.warehouse.parent.glob("*.duckdb*"):
        assert SECRET.encode() not in path.read_bytes(), path
    n_runs, found = flow_runs_mentioning(SECRET)
    assert n_runs >= 3 and found == []


@pytest.mark.core
def test_settings_hide_url_credentials_when_serialized_but_keep_them_in_process(settings):
    settings.base_urls = [f"http://peras:{SECRET}@127.0.0.1:8000/v1", "http://other:9000/v1"]
    assert settings.model_dump(mode="json")["base_urls"] == ["http://127.0.0.1:8000/v1", "http://other:9000/v1"]
    assert SECRET not in settings.model_dump_json()
    assert settings.model_dump()["base_urls"][0] == f"http://peras:{SECRET}@127.0.0.1:8000/v1"
    assert settings.base_urls[0] == f"http://peras:{SECRET}@127.0.0.1:8000/v1"


# 2. An identical request is sent once per run, however far apart its asks are -----------------------------------


@pytest.mark.integration
@pytest.mark.parametrize("concurrency", [1, 8])
def test_an_identical_request_asked_twice_in_one_run_is_sent_once(settings, tmp_path, capsys, monkeypatch, concurrency):
    """Two pairs whose passages have one text ask identical requests. Asked one after the other (concurrency 1, so
    the in-flight dedupe cannot catch it, and before the shard holding the first answer is loaded), the second reuses
    the first's answer; asked while the first is in flight (concurrency 8, the original's requests answered after
    a second, the other 39 pairs' at once), the second waits for the first's answer (tasks/engine/engine.py, ask)."""
    monkeypatch.setenv("PERAS_ENDPOINT_SLOTS_DIR", str(tmp_path / "slots"))
    monkeypatch.setenv("PERAS_CONCURRENCY", str(concurrency))
    files = user_files(tmp_path / "mine")
    first = json.loads(files["passages"].read_text().splitlines()[0])
    with files["passages"].open("a") as handle:
        handle.write(json.dumps({"docid": "e1-copy", "doc": first["doc"]}) + "\n")
    with files["qrels"].open("a") as handle:
        handle.write("s1 0 e1-copy 3\n")
    assert ingest_cli(capsys, settings.warehouse, files).exit_code == 0

    def respond(request):
        slow = concurrency > 1 and first["doc"] in str(request["messages"])
        return Reply(instant(request), delay_s=1.0 if slow else 0.0)

    with FakeOpenAI(respond) as server:
        result = run_cli(
            capsys,
            *("judge", "mine", "--warehouse", str(settings.warehouse), "--personality", "default"),
            *("--cot", "without", "--base-url", server.base_url, "--model", "fake-model"),
        )
        assert result.exit_code == 0, result.err
        bodies = [json.dumps(r.body, sort_keys=True) for r in server.chat_requests]
    assert "(41 new; 80 requests sent, 2 reused)" in result.out
    assert len(bodies) == 41 * 2 - 2  # the copy's label and confidence requests are the original's
    assert len(set(bodies)) == len(bodies)
    original, copy = rows(
        settings.warehouse,
        "select label, confidence, label_request_id, confidence_request_id from judgments"
        " where doc_id like 'e1%' order by doc_id",
    )
    assert original == copy
    assert not_derivable(settings.warehouse) == []
