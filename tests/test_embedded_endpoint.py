"""The embedded server's client (tasks/engine/endpoint.py make_client): no more requests in flight than the server
has slots, and a timeout long enough for one long answer on loaded cores (found running the recognize stage on the
embedded model: each 120 s timeout cancelled the answer being written, and the retry wrote it again)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from peras.errors import BackendError
from peras.settings import Settings
from support.fake_openai import DEFAULT_MODEL, FakeOpenAI, Reply, instant
from tasks.engine.endpoint import EMBEDDED, EMBEDDED_TIMEOUT_S, Endpoint, make_client

pytestmark = pytest.mark.core


def slow(request: dict[str, Any]) -> Reply:
    return Reply(instant(request), delay_s=0.3)


def ask_three(settings: Settings, endpoint: Endpoint) -> list[str]:
    async def go() -> list[str]:
        async with make_client(settings, endpoint) as client:
            asks = [client.chat([{"role": "user", "content": f"q{i}"}], {"max_tokens": 2}) for i in range(3)]
            return [result.text for result in await asyncio.gather(*asks)]

    return asyncio.run(go())


def test_the_embedded_server_gets_one_request_at_a_time_each_waited_for_past_the_settings_timeout(tmp_path):
    settings = Settings(concurrency=8, request_timeout_s=0.1, max_retries=0, endpoint_slots_dir=tmp_path)
    with FakeOpenAI(slow) as server:
        texts = ask_three(settings, Endpoint([server.base_url], DEFAULT_MODEL, EMBEDDED))
        assert (len(texts), len(server.chat_requests), server.peak_in_flight) == (3, 3, 1)
    assert settings.local_parallel == 1 and EMBEDDED_TIMEOUT_S == 900.0


def test_another_server_gets_the_settings_concurrency_and_timeout(tmp_path):
    settings = Settings(concurrency=8, request_timeout_s=5.0, max_retries=0, endpoint_slots_dir=tmp_path)
    with FakeOpenAI(slow) as server:
        texts = ask_three(settings, Endpoint([server.base_url], DEFAULT_MODEL, "vllm"))
        assert (len(texts), server.peak_in_flight) == (3, 3)
    with FakeOpenAI(slow) as server, pytest.raises(BackendError):
        ask_three(settings.model_copy(update={"request_timeout_s": 0.1}), Endpoint([server.base_url], "m", "vllm"))
