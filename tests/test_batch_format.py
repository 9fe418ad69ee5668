"""The OpenAI batch file format (peras/llm/batches.py) and what refuses batch mode, without any server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from peras.errors import InputError, RequestRejected, UsageError
from peras.llm.batches import input_line, read_output_line, split_lines
from peras.llm.client import chat_body
from peras.llm.parsing import parse_label
from peras.settings import load_settings
from tasks.engine.batch import BatchRound, Deferred, Line
from tasks.engine.endpoint import Endpoint
from tasks.engine.spec import Ask, RunIdentity
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


def test_asking_online_only_refuses_batch_mode(tmp_path):
    # ask_all hands batch mode to ask_in_rounds for every stage whose declaration allows it; the persona-set builds
    # (`batch = false`) ask online only and say so in one line.
    settings = load_settings(warehouse=tmp_path / "w.duckdb", mode="batch")
    identity = RunIdentity("w", "persona_sets", "id", "name", "m", "b")
    with pytest.raises(UsageError) as raised:
        ask_all.fn(settings, Endpoint([], "m", "b"), identity, None, None, 10)
    assert str(raised.value) == "--mode batch is not available for persona_sets; ask it with --mode online"


def test_wait_without_batch_mode_is_one_line(tmp_path, capsys):
    from tests.helpers import run_cli

    result = run_cli(capsys, "pairwise", "sample", "--wait", "--warehouse", str(tmp_path / "w.duckdb"))
    assert (result.exit_code, result.err) == (2, "error: --wait waits for batch rounds: give it with --mode batch\n")


class Journal:
    """The two engine methods a batch round calls, recording what they journal."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, ...]] = []

    def record_answer(self, tried, result, parsed):
        seeds = json.dumps([p.get("seed") for p in tried.sent])
        self.rows.append(("answer", tried.request_id, json.dumps(tried.texts), seeds, str(tried.http)))
        return parsed

    def record_refusal(self, tried, reason):
        self.rows.append(("refused", tried.request_id, reason, str(tried.http)))
        return RequestRejected(reason, request_id=tried.request_id)


def completion(text: str) -> dict:
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}], "model": "m"}


ASK = Ask([{"role": "user", "content": "q"}], {"temperature": 0.0}, "label", lambda text: parse_label(text, False))


def test_a_round_answers_regenerates_refuses_and_defers_by_the_lines_collected():
    lines = {
        ("ok", 0): [Line(500, None, None, "boom"), Line(200, completion("2"), None, None)],  # a retried line
        ("regen", 0): [Line(200, completion("no idea"), None, None)],  # unreadable: its regeneration is next
        ("refused", 0): [Line(400, None, None, "too long")],
        ("failing", 0): [Line(500, None, None, "boom")] * 3,  # more failed lines than max_retries (2)
        ("empty", 0): [Line(200, {"choices": []}, None, None)],
    }
    batch = BatchRound("m", lines, live={("live", 0)}, max_retries=2)
    journal = Journal()
    assert batch.answer(journal, ASK, "ok", "h").value == 2
    for request_id in ("regen", "live", "new"):
        with pytest.raises(Deferred):
            batch.answer(journal, ASK, request_id, "h")
    for request_id in ("refused", "failing", "empty"):
        with pytest.raises(RequestRejected):
            batch.answer(journal, ASK, request_id, "h")
    assert journal.rows == [
        ("answer", "ok", '["2"]', "[null]", "2"),
        ("refused", "refused", "the batch answered HTTP 400: too long", "1"),
        ("refused", "failing", "the batch answered HTTP 500: boom", "3"),
        ("refused", "empty", "the batch answered HTTP 200 but not a chat completion", "1"),
    ]
    # Submitted next: the regeneration (seed 1000, temperature 0.7) and the new request; not the live one.
    pending = {cid: (rid, attempt, body.get("seed")) for cid, (rid, attempt, body) in batch.pending.items()}
    assert pending == {"regen-r1": ("regen", 1, 1000), "new": ("new", 0, None)}
    assert batch.pending["regen-r1"][2]["temperature"] == 0.7


def test_the_study_endpoints_file_and_a_preset_give_the_mode(tmp_path):
    from peras.models import load_model_presets
    from tasks.study.endpoints import load_endpoints, model_settings

    presets = load_model_presets()
    path = tmp_path / "endpoints.toml"
    path.write_text('[llama-3-8b]\nbase_urls = ["http://gpu:8000/v1"]\nmode = "batch"\n[gpt-4o]\n')
    entries = load_endpoints(path, presets)
    settings = load_settings(warehouse=tmp_path / "w.duckdb")
    assert model_settings(settings, presets.get("llama-3-8b"), entries, path).mode == "batch"
    batch_preset = presets.get("llama-3-8b").model_copy(update={"mode": "batch"})
    entries["llama-3-8b"] = entries["llama-3-8b"].model_copy(update={"mode": None})
    assert (
        model_settings(settings, batch_preset, entries, path).mode == "batch"
    )  # the preset's, when the file is silent
    assert model_settings(settings, presets.get("llama-3-8b"), entries, path).mode == "online"
    path.write_text('[llama-3-8b]\nmode = "offline"\n')
    with pytest.raises(UsageError) as raised:
        load_endpoints(path, presets)
    assert str(raised.value).startswith(
        f"endpoints file {path}: [llama-3-8b] mode: Input should be 'online' or 'batch'"
    )


# An answer whose content is not a string (a number, null, a list): an unreadable answer, never a crash.
NOT_TEXT = [5, 2.0, None, [{"type": "text", "text": "2"}], {"x": 1}, True]


@pytest.mark.parametrize("content", NOT_TEXT)
def test_an_answer_whose_content_is_no_string_reads_as_no_text(content):
    from peras.llm.responses import decode_chat

    body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}], "model": "m"}
    result = decode_chat(json.dumps(body).encode(), "u", 0.0, 1, False)
    assert result is not None and result.texts == [""]


def test_a_batch_line_whose_content_is_a_number_is_regenerated_then_recorded_unreadable():
    lines = {("n", attempt): [Line(200, completion(5), None, None)] for attempt in range(3)}  # type: ignore[arg-type]
    journal = Journal()
    ask = Ask(ASK.messages, ASK.params, "label", ASK.parse, regenerations=2)
    parsed = BatchRound("m", {("n", 0): lines[("n", 0)]}, live=set(), max_retries=2)
    with pytest.raises(Deferred):  # its regeneration is asked next
        parsed.answer(journal, ask, "n", "h")
    batch = BatchRound("m", lines, live=set(), max_retries=2)
    assert batch.answer(journal, ask, "n", "h").ok is False
    assert journal.rows == [("answer", "n", '["", "", ""]', "[null, 1000, 2000]", "3")]


def test_export_into_the_warehouse_file_or_under_it_is_one_line_and_writes_nothing(tmp_path):
    from peras.warehouse import open_migrated
    from tasks.engine.batch_files import export_files

    warehouse = tmp_path / "w.duckdb"
    with open_migrated(warehouse):
        pass
    (tmp_path / "notes.txt").write_text("mine")
    cases = {
        warehouse: f"{warehouse} is the warehouse",
        warehouse / "rounds": f"{warehouse}/rounds is no directory (under {warehouse}, the warehouse)",
        tmp_path / "notes.txt" / "x": f"{tmp_path}/notes.txt/x is no directory (under {tmp_path}/notes.txt, a file)",
    }
    before = {path: path.stat().st_mtime_ns for path in tmp_path.rglob("*")}
    for output, message in cases.items():
        with pytest.raises(UsageError) as raised:
            export_files(load_settings(warehouse=warehouse), "no-run", output)
        assert raised.value.exit_code == 2
        assert str(raised.value) == f"--output {message}; give a directory for the input files (nothing was written)"
        assert {path: path.stat().st_mtime_ns for path in tmp_path.rglob("*")} == before
