"""The scripted OpenAI-compatible test server: scripted replies, faults, the instant responder."""

from __future__ import annotations

import asyncio
import re
import zlib

import pytest

from peras.errors import BackendError
from peras.llm.client import LLMClient
from peras.prompting import load_personalities
from support.fake_openai import FakeOpenAI, fake_openai_process, instant, script
from tasks.judge.prompt import build_confidence_messages, build_label_messages

pytestmark = pytest.mark.core


async def ask(url: str, messages: list[dict[str, str]], model: str = "fake-model") -> str:
    async with LLMClient([url], model, max_retries=0) as client:
        return (await client.chat(messages)).text


def test_instant_label_and_confidence_answers() -> None:
    default = load_personalities()[0]
    label = build_label_messages(default, "cats", "Cats purr.", cot=False)
    confidence = build_confidence_messages(default, "cats", "Cats purr.", predicted_score=2)
    label_crc = zlib.crc32(label[0]["content"].encode("utf-8"))
    confidence_crc = zlib.crc32(confidence[0]["content"].encode("utf-8"))
    assert instant({"messages": label}) == str(label_crc % 4)
    assert instant({"messages": confidence}) == str(50 + confidence_crc % 51)
    assert instant({"messages": label, "n": 2}) == [
        str(label_crc % 4),
        str(zlib.crc32(label[0]["content"].encode() + b"#1") % 4),
    ]


def test_instant_answers_umbrelas_own_prompt_in_the_json_its_parser_reads() -> None:
    # umbrela 0.0.7's prompt ends so; its parser reads `"o": N` (bench/umbrela_judge.py runs the real UMBRELA)
    content = "Query: cats\nPassage: Cats purr.\nProduce a JSON dictionary of scores without providing any reasoning."
    crc = zlib.crc32(content.encode("utf-8"))
    answer = instant({"messages": [{"role": "system", "content": "x"}, {"role": "user", "content": content}]})
    assert answer == f'{{"M": {crc // 4 % 4}, "T": {crc // 16 % 4}, "O": {crc % 4}}}'
    assert re.search(r'"o": ([0-3])', answer.lower()).group(1) == str(crc % 4)  # type: ignore[union-attr]


def test_instant_answers_vary_across_prompts() -> None:
    default = load_personalities()[0]
    answers = {instant({"messages": build_label_messages(default, f"q{i}", "d", cot=True)}) for i in range(40)}
    assert answers == {"0", "1", "2", "3"}


def test_unknown_model_is_404() -> None:
    with FakeOpenAI() as server, pytest.raises(BackendError) as caught:
        asyncio.run(ask(server.base_url, [{"role": "user", "content": "x"}], model="gpt-9"))
    assert str(caught.value) == f"{server.base_url} rejected the request: HTTP 404: The model `gpt-9` does not exist."


@pytest.mark.parametrize(
    ("responder", "message"),
    [
        (script([]), "HTTP 500: fake server script exhausted"),  # more requests than the test scripted
        (
            lambda request: 1 / 0,
            "HTTP 500: responder failed: ZeroDivisionError('division by zero')",
        ),  # test bug
    ],
)
def test_responder_problems_are_500s(responder, message: str) -> None:
    with FakeOpenAI(responder) as server, pytest.raises(BackendError, match=re.escape(message)):
        asyncio.run(ask(server.base_url, [{"role": "user", "content": "x"}]))


def test_records_requests_and_resets() -> None:
    with FakeOpenAI() as server:
        asyncio.run(ask(server.base_url, [{"role": "user", "content": "hello"}]))
        (request,) = server.chat_requests
        assert (request.method, request.path, request.body["messages"]) == (
            "POST",
            "/v1/chat/completions",
            [{"role": "user", "content": "hello"}],
        )
        server.reset()
        assert (server.requests, server.peak_in_flight) == ([], 0)


def test_standalone_process_serves_instant() -> None:
    messages = [{"role": "user", "content": "hello"}]
    with fake_openai_process() as url:
        assert asyncio.run(ask(url, messages)) == instant({"messages": messages})
