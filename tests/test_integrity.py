"""Issue 14, nothing lost and nothing contradicted: shards stay in their warehouse, every answer is reused, the
budget counts what the server received, failures are asked again. Through the real `peras` CLI or the flow.

Failing servers, changed texts, dying runs, bounded waits and credentials: tests/test_integrity_failures.py.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from flows.ingest import ingest
from flows.judge import judge
from peras.errors import CheckFailed
from support.fake_openai import FakeOpenAI, Fault, Reply, instant
from tests.helpers import run_cli

pytestmark = pytest.mark.integration


def rows(warehouse: Path, sql: str, params: list | None = None) -> list[tuple]:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


def execute(warehouse: Path, sql: str, params: list | None = None) -> None:
    con = duckdb.connect(str(warehouse))
    try:
        con.execute(sql, params or [])
    finally:
        con.close()


def not_derivable(warehouse: Path) -> list[tuple]:
    """Judgments that contradict the stored requests they reference (the warehouse contradicting itself)."""
    return rows(warehouse, "select * from judgment_check('judgments') where not is_derivable")


def judge_cli(capsys, warehouse: Path, server: FakeOpenAI, *args: str):
    """`peras judge sample` against the fake server, into `warehouse`."""
    return run_cli(
        capsys,
        "judge",
        "sample",
        "--warehouse",
        str(warehouse),
        "--base-url",
        server.base_url,
        "--model",
        "fake-model",
        *args,
    )


@pytest.fixture
def sample(settings, tmp_path, monkeypatch, ingested):
    """The shipped sample (10 topics, 40 pairs) in a fresh warehouse; slots kept in tmp_path."""
    monkeypatch.setenv("PERAS_ENDPOINT_SLOTS_DIR", str(tmp_path / "slots"))
    ingested("sample", settings)
    return settings


def use(settings, server: FakeOpenAI):
    settings.base_urls = [server.base_url]
    settings.model = "fake-model"
    settings.endpoint_slots_dir = settings.warehouse.parent / "slots"
    return settings


# 1. Shards never cross warehouses ------------------------------------------------------------------------------


def judge_process(warehouse: Path, base_url: str, run_name: str, *args: str, slots: str = "slots") -> subprocess.Popen:
    env = {
        **os.environ,
        "PERAS_WAREHOUSE": str(warehouse),
        "PERAS_CONCURRENCY": "4",
        "PERAS_ENDPOINT_SLOTS_DIR": str(warehouse.parent / slots),
    }
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cli.main",
            "judge",
            "sample",
            "--base-url",
            base_url,
            "--model",
            "fake-model",
            "--run-name",
            run_name,
            "--personality",
            "default",
            "--personality",
            "HA",
            *args,
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def warehouse_id(warehouse: Path) -> str:
    return rows(warehouse, "select warehouse_id from warehouse_identity")[0][0]


def run_id(warehouse: Path, name: str) -> str:
    return rows(warehouse, "select run_id from judge_runs where run_name = ?", [name])[0][0]


def outcome_lines(directory: Path) -> int:
    return sum(p.read_text().count("\n") for p in directory.glob("**/*.outcomes.jsonl")) if directory.exists() else 0


def test_shards_of_a_killed_run_stay_in_their_warehouse(settings, tmp_path):
    first, second = tmp_path / "a.duckdb", tmp_path / "b.duckdb"  # one directory: one shards/ folder
    for warehouse in (first, second):
        ingest(preset="sample", settings=settings.model_copy(update={"warehouse": warehouse}))
    shards = tmp_path / "shards"
    with FakeOpenAI(lambda request: Reply(instant(request), delay_s=0.02)) as server:
        killed = judge_process(first, server.base_url, "same", "--chunk-size", "4096")  # nothing loaded before the kill
        deadline = time.monotonic() + 120
        while outcome_lines(shards) < 20 and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(killed.pid, signal.SIGKILL)
        killed.wait()
        left = outcome_lines(shards)
        assert left >= 20
        own = shards / warehouse_id(first) / "judge" / run_id(first, "same")
        kept = sorted(own.glob("*.jsonl"))
        assert kept and all(p.parent == own for p in shards.glob("**/*.jsonl"))
        copies = tmp_path / "copies"
        shutil.copytree(own, copies)

        # The second warehouse, same run name: its run never sees the first one's shards.
        other = judge_process(second, server.base_url, "same")
        out, err = other.communicate(timeout=300)
        assert other.returncode == 0, err
        assert out.startswith("same: 160 judgments (160 new;")
        assert sorted(own.glob("*.jsonl")) == kept and outcome_lines(shards) == left
        assert rows(second, "select count(*) from judgments") == [(160,)]

        # The first warehouse's rerun loads its own shards and publishes exactly its planned items.
        rerun = judge_process(first, server.base_url, "same")
        out, err = rerun.communicate(timeout=300)
        assert rerun.returncode == 0, err
        n_new = int(re.match(r"same: 160 judgments \((\d+) new", out).group(1))
        assert n_new <= 160 - left
        assert not own.exists() or not list(own.glob("*.jsonl"))
    assert rows(
        first, "select count(*), count(distinct (query_id, doc_id, personality, cot, confidence_method)) from judgments"
    ) == [(160, 160)]
    assert rows(first, "select status from judge_runs") == [("published",)]
    assert not_derivable(first) == [] and not_derivable(second) == []

    # A shard of the first warehouse placed in the second's run directory is refused: one line, nothing loaded.
    target = shards / warehouse_id(second) / "judge" / run_id(second, "same")
    target.mkdir(parents=True, exist_ok=True)
    for path in copies.glob("*.jsonl"):
        shutil.copy(path, target / path.name)
    before = rows(second, "select count(*) from judgments union all select count(*) from llm_requests")
    with FakeOpenAI(instant) as server:
        refused = judge_process(second, server.base_url, "same")
        out, err = refused.communicate(timeout=300)
        assert server.chat_requests == []
    assert refused.returncode == 1
    assert len(err.strip().splitlines()) == 1, err
    assert re.match(
        rf"error: requests shards in {re.escape(str(target))} hold \d+ line\(s\) of warehouse {warehouse_id(first)},"
        rf" run {run_id(first, 'same')}, not of this warehouse \({warehouse_id(second)}\)",
        err,
    ), err
    assert rows(second, "select count(*) from judgments union all select count(*) from llm_requests") == before
    assert sorted(p.name for p in target.glob("*.jsonl")) == sorted(p.name for p in copies.glob("*.jsonl"))


def test_gate_names_each_foreign_or_contradicting_item_and_rederives_a_lost_one(sample, capsys):
    warehouse = sample.warehouse
    args = ("--run-name", "gated", "--personality", "default", "--cot", "without", "--limit-pairs", "3")
    with FakeOpenAI(instant) as server:
        assert judge_cli(capsys, warehouse, server, *args).exit_code == 0
        sent = len(server.chat_requests)
        assert sent == 6
        rid = run_id(warehouse, "gated")
        first = rows(warehouse, "select * exclude (judged_at) from judgments order by all")

        # A lost judgment is made again from the stored answers: nothing sent, the same values.
        execute(warehouse, "delete from judgments where doc_id = (select min(doc_id) from judgments)")
        result = judge_cli(capsys, warehouse, server, *args)
        assert result.exit_code == 0, result.err
        assert result.out.startswith("gated: 3 judgments (1 new; 0 requests sent, 2 reused)")
        assert len(server.chat_requests) == sent
        assert rows(warehouse, "select * exclude (judged_at) from judgments order by all") == first

        # A judgment of a pair that is not in the collection: the gate names it.
        execute(
            warehouse,
            "insert into judgments (run_id, query_id, doc_id, personality, cot, confidence_method, label, confidence,"
            " status, label_request_id, judged_at) select run_id, 'q-foreign', 'd-foreign', personality, cot,"
            " confidence_method, label, confidence, status, label_request_id, judged_at from judgments limit 1",
        )
        result = judge_cli(capsys, warehouse, server, *args)
        assert result.exit_code == 1
        assert "[judgment of a pair not in the collection] q-foreign d-foreign default cot=false verbalized" in (
            result.err
        )
        assert rows(warehouse, "select status, status_reason like '%q-foreign%' from judge_runs") == [
            ("failed_check", True)
        ]
        assert rows(warehouse, "select count(*) from stg_judgment_facts") == [(0,)]
        execute(warehouse, "delete from judgments where query_id = 'q-foreign'")

        # A judgment whose label contradicts its stored answer: named, not published.
        query_id, doc_id, label = rows(
            warehouse, "select query_id, doc_id, label from judgments order by doc_id limit 1"
        )[0]
        execute(warehouse, "update judgments set label = (label + 1) % 4 where doc_id = ?", [doc_id])
        result = judge_cli(capsys, warehouse, server, *args)
        assert result.exit_code == 1
        assert (
            f"[judgment not derivable from its requests] {query_id} {doc_id} default cot=false verbalized:"
            f" label {(label + 1) % 4} but its request reads {float(label)}" in result.err
        )
        assert len(server.chat_requests) == sent
    assert rows(warehouse, "select run_id, status from judge_runs") == [(rid, "failed_check")]


def test_gate_names_a_missing_item(sample):
    from peras.prompting import select_personalities
    from tasks.engine.endpoint import Endpoint
    from tasks.engine.runs import claim_run
    from tasks.judge.runs import judge_claim, judge_config
    from tasks.judge.tasks import check_judge_run, load_pairs, plan_judgments

    with FakeOpenAI(instant) as server:
        judge(
            collection="sample",
            personalities=["default"],
            cot=[False],
            limit_pairs=3,
            run_name="holed",
            settings=use(sample, server),
        )
    gone = rows(sample.warehouse, "select query_id, doc_id from judgments order by doc_id desc limit 1")[0]
    execute(sample.warehouse, "delete from judgments where doc_id = ?", [gone[1]])
    config = judge_config(Endpoint([server.base_url], "fake-model", "openai-compatible"), 10)
    claim = judge_claim("holed", "sample", None, config, ["verbalized"])
    run = claim_run(sample, warehouse_id(sample.warehouse), claim, config.model, config.backend)
    plan = plan_judgments(
        run, load_pairs.fn(sample, "sample", None, 3), select_personalities(["default"]), [False], ["verbalized"]
    )
    with pytest.raises(CheckFailed, match=rf"\[missing judgment\] {gone[0]} {gone[1]} default cot=false verbalized"):
        check_judge_run.fn(sample, run, plan, config)


# 2. Every request kind goes through the cache; the warehouse never contradicts itself ---------------------------


ALL_KINDS = (
    "--personality",
    "default",
    "--personality",
    "HA",
    "--limit-pairs",
    "3",
    "--n-samples",
    "3",
    "--confidence-method",
    "verbalized",
    "--confidence-method",
    "logprob",
    "--confidence-method",
    "sampling",
)


def test_a_second_run_of_the_same_model_sends_nothing_for_any_request_kind(sample, capsys):
    with FakeOpenAI(instant) as server:
        first = judge_cli(capsys, sample.warehouse, server, "--run-name", "first", *ALL_KINDS)
        assert first.exit_code == 0, first.err
        sent = len(server.chat_requests)
        # 2 personalities x 2 settings x 3 pairs: verbalized 2 requests, logprob 1, sampling 3 each; the confidence
        # request names the label, not the reasoning: where both CoT settings gave one label (3 items), it is one
        # request, sent once
        assert sent == 12 * (2 + 1 + 3) - 3
        second = judge_cli(capsys, sample.warehouse, server, "--run-name", "second", *ALL_KINDS)
        assert second.exit_code == 0, second.err
        assert len(server.chat_requests) == sent
    assert second.out.startswith("second: 36 judgments (36 new; 0 requests sent, 72 reused)")
    assert rows(
        sample.warehouse,
        "select run_name, r.status, count(*) from judge_runs r join judgments using (run_id) group by all order by 1",
    ) == [("first", "published", 36), ("second", "published", 36)]
    assert rows(
        sample.warehouse,
        "select count(*) from (select * exclude (run_id, judged_at) from judgments where run_id = ? "
        "except select * exclude (run_id, judged_at) from judgments where run_id = ?)",
        [run_id(sample.warehouse, "first"), run_id(sample.warehouse, "second")],
    ) == [(0,)]
    assert not_derivable(sample.warehouse) == []


def test_a_shard_judgment_contradicting_its_answer_is_left_out_and_rederived(sample, capsys):
    warehouse = sample.warehouse
    args = ("--run-name", "mended", "--personality", "default", "--cot", "without", "--limit-pairs", "3")
    with FakeOpenAI(instant) as server:
        assert judge_cli(capsys, warehouse, server, *args).exit_code == 0
        sent = len(server.chat_requests)
        stored = rows(
            warehouse,
            "select query_id, doc_id, label, confidence, label_request_id, confidence_request_id, text_sha"
            " from judgments order by doc_id limit 1",
        )[0]
        query_id, doc_id, label, confidence, label_request, confidence_request, text_sha = stored
        execute(warehouse, "delete from judgments where doc_id = ?", [doc_id])
        # A hand-made shard: this warehouse's and run's line, but a label its stored answer does not give.
        directory = sample.shards / warehouse_id(warehouse) / "judge" / run_id(warehouse, "mended")
        directory.mkdir(parents=True, exist_ok=True)
        line = {
            "warehouse_id": warehouse_id(warehouse),
            "run_id": run_id(warehouse, "mended"),
            "query_id": query_id,
            "doc_id": doc_id,
            "personality": "default",
            "cot": False,
            "confidence_method": "verbalized",
            "label": (label + 1) % 4,
            "confidence": confidence,
            "status": "ok",
            "label_request_id": label_request,
            "confidence_request_id": confidence_request,
            "text_sha": text_sha,
            "judged_at": "2025-01-01T00:00:00",
        }
        (directory / "hand-00001.outcomes.jsonl").write_text(json.dumps(line) + "\n")
        result = judge_cli(capsys, warehouse, server, *args)
        assert result.exit_code == 0, result.err
        assert len(server.chat_requests) == sent  # re-derived from the stored answers
    assert result.out.startswith("mended: 3 judgments (1 new; 0 requests sent, 2 reused)")
    assert rows(warehouse, "select label, confidence from judgments where doc_id = ?", [doc_id]) == [
        (label, confidence)
    ]
    assert not list(directory.glob("*.jsonl"))
    assert rows(warehouse, "select count(*), count(*) filter (where status = 'ok') from judgments") == [(3, 3)]
    assert not_derivable(warehouse) == []


def test_a_concurrent_run_answered_differently_is_rederived_from_the_stored_answers(sample):
    """Two runs ask the same requests at once and get different labels: the run that loads second keeps the
    stored answers, leaves its contradicting judgments out and makes them again from the stored answers in a
    further pass, sending nothing more."""
    asked: dict[str, int] = {}

    def respond(request):
        key = json.dumps([request["messages"], request.get("seed")])
        asked[key] = asked.get(key, 0) + 1
        text = instant(request)
        if asked[key] > 1 and "please give a confidence score" not in str(request["messages"]):
            text = str((int(text) + 1) % 4)  # a second asking of a label request gets another label
        # The first run's first requests are held until the other run has asked everything (and loaded it).
        return Reply(text, delay_s=15.0 if sum(asked.values()) <= 4 else 0.05)

    args = ("--cot", "without", "--limit-pairs", "10")
    with FakeOpenAI(respond) as server:
        # Slots of their own: the held requests of one run must not hold the other back.
        runs = [judge_process(sample.warehouse, server.base_url, name, *args, slots=name) for name in ("one", "two")]
        for proc in runs:
            out, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, err
            assert re.match(r"(one|two): 20 judgments \(20 new; 40 requests sent, (0|40) reused\)", out), out
    assert rows(sample.warehouse, "select count(*) > 0 from llm_request_history where why like 'duplicate%'") == [
        (True,)
    ], "the two runs did not overlap"
    assert max(asked.values()) == 2  # once by each run, never again in the further pass
    assert rows(
        sample.warehouse,
        "select run_name, r.status, count(*) from judge_runs r join judgments using (run_id) group by all order by 1",
    ) == [("one", "published", 20), ("two", "published", 20)]
    assert rows(
        sample.warehouse,
        "select count(*) from judgments a join judgments b using (query_id, doc_id, personality, cot)"
        " where a.run_id < b.run_id and (a.label, a.confidence) <> (b.label, b.confidence)",
    ) == [(0,)]
    assert not_derivable(sample.warehouse) == []


# 3. --request-budget is a run-wide ceiling on what the server received -----------------------------------------


BUDGETED = (
    "--run-name",
    "budgeted",
    "--personality",
    "default",
    "--cot",
    "without",
    "--limit-pairs",
    "10",
    "--concurrency",
    "8",
)


def test_request_budget_caps_what_the_server_receives_across_resumes(sample, capsys):
    with FakeOpenAI(lambda request: Reply(instant(request), delay_s=0.05)) as server:
        spent = judge_cli(capsys, sample.warehouse, server, *BUDGETED, "--request-budget", "5")
        assert len(server.chat_requests) == 5
        assert spent.exit_code == 1
        assert spent.err.splitlines() == [
            "error: request budget of 5 reached (5 requests sent); raise --request-budget to go on"
        ]
        again = judge_cli(capsys, sample.warehouse, server, *BUDGETED, "--request-budget", "5")
        assert len(server.chat_requests) == 5
        assert again.exit_code == 1
        assert again.err.splitlines() == spent.err.splitlines()
        more = judge_cli(capsys, sample.warehouse, server, *BUDGETED, "--request-budget", "20")
        assert more.exit_code == 0, more.err
        assert more.out.startswith("budgeted: 10 judgments (10 new; 15 requests sent, 5 reused)")
        assert len(server.chat_requests) == 20  # 10 pairs x 2 requests: nothing was asked twice
    assert rows(sample.warehouse, "select status, sum(http_requests) from judge_runs, llm_requests group by 1") == [
        ("published", 20)
    ]


def test_retries_of_server_errors_count_against_the_budget(sample, capsys, monkeypatch):
    monkeypatch.setenv("PERAS_MAX_RETRIES", "3")
    replies = iter([Fault(500)] * 4)

    def respond(request):
        return next(replies, None) or Reply(instant(request), delay_s=0.05)

    with FakeOpenAI(respond) as server:
        spent = judge_cli(capsys, sample.warehouse, server, *BUDGETED, "--request-budget", "6")
        assert spent.exit_code == 1
        assert len(server.chat_requests) == 6
        assert spent.err.splitlines() == [
            "error: request budget of 6 reached (6 requests sent); raise --request-budget to go on"
        ]
        again = judge_cli(capsys, sample.warehouse, server, *BUDGETED, "--request-budget", "6")
        assert again.exit_code == 1
        assert len(server.chat_requests) == 6  # the 500s were counted, though their requests got no answer
        assert judge_cli(capsys, sample.warehouse, server, *BUDGETED, "--request-budget", "24").exit_code == 0
        assert len(server.chat_requests) == 24  # 20 answered requests and the 4 failures
    assert rows(sample.warehouse, "select status from judge_runs") == [("published",)]


# 5. Failures are not cached forever ------------------------------------------------------------------------------


GARBLED = ("--personality", "default", "--cot", "without", "--limit-pairs", "3")


class Mendable:
    """A server answering garbage until mended."""

    def __init__(self) -> None:
        self.mended = False

    def __call__(self, request):
        return instant(request) if self.mended else "I would rather not say."


def test_a_new_run_asks_again_what_failed_and_keeps_the_old_attempts(sample, capsys):
    respond = Mendable()
    with FakeOpenAI(respond) as server:
        bad = judge_cli(capsys, sample.warehouse, server, "--run-name", "bad", *GARBLED)
        assert bad.exit_code == 1
        assert "[parse failures above threshold] default cot=false verbalized: 3 of 3 failed" in bad.err
        assert len(server.chat_requests) == 3 * 5  # every label asked, then regenerated 4 times
        respond.mended = True
        good = judge_cli(capsys, sample.warehouse, server, "--run-name", "good", *GARBLED)
        assert good.exit_code == 0, good.err
        assert len(server.chat_requests) == 15 + 3 + 3  # the 3 failed labels again, then their confidences
    assert rows(
        sample.warehouse,
        "select run_name, r.status, j.status, count(*) from judge_runs r join judgments j"
        " using (run_id) group by all order by 1",
    ) == [("bad", "failed_check", "label_parse_failure", 3), ("good", "published", "ok", 3)]
    old_attempts = (
        "select h.why, h.parse_status, json_array_length(h.attempt_texts), h.run_id = r.run_id, l.parse_status"
        " from llm_request_history h join judge_runs r on r.run_name = 'bad'"
        " join llm_requests l using (request_id)"
    )
    assert rows(sample.warehouse, old_attempts) == [("failure re-asked", "parse_failure", 5, True, "ok")] * 3
    assert not_derivable(sample.warehouse) == []


def test_the_same_run_reuses_its_failures_unless_told_to_retry_them(sample, capsys):
    respond = Mendable()
    with FakeOpenAI(respond) as server:
        assert judge_cli(capsys, sample.warehouse, server, "--run-name", "same", *GARBLED).exit_code == 1
        respond.mended = True
        resumed = judge_cli(capsys, sample.warehouse, server, "--run-name", "same", *GARBLED)
        assert resumed.exit_code == 1
        assert "3 of 3 failed" in resumed.err
        assert len(server.chat_requests) == 15  # its own stored failures, reused
        # `peras judge` has no --retry-failed flag (yet): the flow parameter.
        result = judge(
            collection="sample",
            personalities=["default"],
            cot=[False],
            limit_pairs=3,
            run_name="same",
            retry_failed=True,
            settings=use(sample, server),
        )
        assert len(server.chat_requests) == 15 + 6
    assert (result["n_judged_now"], result["n_sent"], result["n_failures"]) == (3, 6, 0)
    assert rows(sample.warehouse, "select r.status, count(*) from judge_runs r, judgments group by all") == [
        ("published", 3)
    ]
    assert rows(sample.warehouse, "select status, why, count(*) from judgment_history group by all") == [
        ("label_parse_failure", "failure asked again", 3)
    ]
    assert rows(sample.warehouse, "select why, parse_status, count(*) from llm_request_history group by all") == [
        ("failure re-asked", "parse_failure", 3)
    ]
    assert not_derivable(sample.warehouse) == []


def test_a_refused_request_is_asked_again_by_a_new_run(sample, capsys, monkeypatch):
    monkeypatch.setenv("PERAS_MAX_PARSE_FAILURE_SHARE", "1")
    refusing = {"on": True}

    def respond(request):
        if refusing["on"] and "Six minutes" in str(request["messages"]):
            return Fault(400, body={"error": {"message": "context length exceeded"}})
        return instant(request)

    with FakeOpenAI(respond) as server:
        assert judge_cli(capsys, sample.warehouse, server, "--run-name", "first", *GARBLED).exit_code == 0
        refused = [r for r in server.chat_requests if "Six minutes" in str(r.body["messages"])]
        assert len(refused) == 1
        refusing["on"] = False
        assert judge_cli(capsys, sample.warehouse, server, "--run-name", "second", *GARBLED).exit_code == 0
        again = [r for r in server.chat_requests if "Six minutes" in str(r.body["messages"])]
        assert len(again) == 3  # the refused label again, and its confidence
    assert rows(
        sample.warehouse,
        "select run_name, j.status, count(*) from judge_runs r join judgments j using (run_id)"
        " group by all order by all",
    ) == [("first", "error", 1), ("first", "ok", 2), ("second", "ok", 3)]
    assert rows(
        sample.warehouse,
        "select why, parse_status, parse_reason like '%HTTP 400: context length%' from llm_request_history",
    ) == [("failure re-asked", "refused", True)]
    assert not_derivable(sample.warehouse) == []


def test_a_sampling_vote_another_run_asks_again_keeps_the_first_judgment_derivable(sample, capsys):
    """A vote that failed for run `first` and that run `second` then asks again successfully: `first`'s judgment
    (made with that vote failed) stays derivable from its requests, and so does `second`'s."""
    mended = {"on": False}

    def respond(request):
        if not mended["on"] and request.get("seed") % 1000 == 1:  # vote 1 and its regenerations (seeds 1001...)
            return "I would rather not say."
        return instant(request)

    sampling = ("--personality", "default", "--cot", "without", "--limit-pairs", "2")
    sampling += ("--confidence-method", "sampling", "--n-samples", "4")
    with FakeOpenAI(respond) as server:
        first = judge_cli(capsys, sample.warehouse, server, "--run-name", "first", *sampling)
        assert first.exit_code == 0, first.err
        assert len(server.chat_requests) == 2 * (3 + 5)  # seed 1 regenerated 4 times per pair
        mended["on"] = True
        second = judge_cli(capsys, sample.warehouse, server, "--run-name", "second", *sampling)
        assert second.exit_code == 0, second.err
        assert len(server.chat_requests) == 16 + 2  # only the failed votes again
    assert rows(
        sample.warehouse,
        "select run_name, confidence, count(*) from judge_runs join judgments using (run_id) group by all order by all",
    ) == [("first", 75.0, 2), ("second", 100.0, 2)]
    assert rows(sample.warehouse, "select why, parse_status, count(*) from llm_request_history group by all") == [
        ("failure re-asked", "parse_failure", 2)
    ]
    assert not_derivable(sample.warehouse) == []
