"""The OpenAI batch file format (peras/llm/batches.py) and what refuses batch mode, without any server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from peras.errors import InputError, UsageError
from peras.llm.batches import input_line, read_output_line, split_lines
from peras.llm.client import chat_body
from peras.settings import load_settings
from tasks.engine.endpoint import Endpoint
from tasks.engine.spec import RunIdentity
from tasks.engine.tasks import ask_all

pytestmark = pytest.mark.core

ANSWER = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "2"}}], "model": "m"}


def test_an_input_line_carries_the_online_body():
    body = chat_body("m", [{"role": "user", "content": "q"}], {"temperature": 0.0, "extra_body": {"cache_prompt": 1}})
    assert json.loads(input_line("abc", body)) == {
        "custom_id": "abc",
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": {"model": "m", "messages": [{"role": "user", "content": "q"}], "temperature": 0.0, "cache_prompt": 1},
    }


def test_rounds_are_split_at_the_line_and_byte_limits():
    lines = [b"x" * 10 + b"\n"] * 5  # 11 bytes each
    assert [len(part) for part in split_lines(lines, max_lines=2, max_bytes=1000)] == [2, 2, 1]
    assert [len(part) for part in split_lines(lines, max_lines=100, max_bytes=33)] == [3, 2]


OUTPUT_LINES = [
    # OpenAI's answered line
    (
        {
            "id": "b",
            "custom_id": "c",
            "response": {"status_code": 200, "request_id": "r", "body": ANSWER},
            "error": None,
        },
        (200, ANSWER, None, None),
    ),
    # OpenAI's expired line: no response, an error object
    (
        {"id": "b", "custom_id": "c", "response": None, "error": {"code": "batch_expired", "message": "late"}},
        (None, None, "batch_expired", "late"),
    ),
    # vLLM's refused line: status 400, no body, the error as a string
    (
        {"id": "v", "custom_id": "c", "response": {"status_code": 400, "request_id": "r", "body": None}, "error": "no"},
        (400, None, None, "no"),
    ),
    # a provider's per-line server error: the error in the body
    (
        {"custom_id": "c", "response": {"status_code": 500, "body": {"error": {"message": "boom", "code": "x"}}}},
        (500, None, "x", "boom"),
    ),
]


@pytest.mark.parametrize(("line", "read"), OUTPUT_LINES)
def test_output_lines_of_openai_and_vllm_are_read(line, read):
    got = read_output_line(json.dumps(line).encode(), "out.jsonl", 3)
    assert (got.custom_id, got.status_code, got.body, got.error_code, got.error_message) == ("c", *read)


BAD_LINES = [
    (b'{"custom_id": "c", "resp', "out.jsonl:7: not a JSON line (truncated?)"),
    (b'{"custom_id": "c", "method": "POST", "body": {}}', "out.jsonl:7: not a batch output line"),
    (b'{"custom_id": "c", "response": {"status_code": 200, "body": {"x": 1}}}', "out.jsonl:7: status 200 but its"),
    (b'{"custom_id": "c", "response": [1]}', "out.jsonl:7: its response is not an object"),
]


@pytest.mark.parametrize(("raw", "message"), BAD_LINES)
def test_a_bad_output_line_names_file_and_line(raw, message):
    with pytest.raises(InputError) as raised:
        read_output_line(raw, Path("out.jsonl"), 7)
    assert str(raised.value).startswith(message)


def test_a_stage_other_than_the_judge_refuses_batch_mode(tmp_path):
    settings = load_settings(warehouse=tmp_path / "w.duckdb", mode="batch")
    identity = RunIdentity("w", "priming", "id", "name", "m", "b")
    with pytest.raises(UsageError) as raised:
        ask_all.fn(settings, Endpoint([], "m", "b"), identity, None, None, 10)
    assert str(raised.value) == "--mode batch is not available for priming yet; ask it with --mode online"
