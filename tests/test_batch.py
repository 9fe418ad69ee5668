"""Batch mode end to end: the judge flow through the scripted Batch API (support/fake_batch.py), against online."""

from __future__ import annotations

import json

import duckdb
import pytest

from flows.judge import judge
from support.fake_batch import BatchScript, FakeBatchAPI
from support.fake_openai import FakeOpenAI, instant

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
