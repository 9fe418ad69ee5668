"""The LLM client against the scripted OpenAI-compatible server, over real HTTP on loopback."""

from __future__ import annotations

import asyncio
import email.utils
import socket
import time
from collections.abc import Coroutine, Iterator
from typing import Any

import pytest

from peras.errors import BackendError, UsageError
from peras.llm.client import ChatResult, LLMClient
from peras.llm.logprobs import label_logprob_scores
from peras.llm.responses import retry_after_s
from support.fake_openai import FakeOpenAI, Fault, Reply, instant, script

pytestmark = pytest.mark.core

MESSAGES = [{"role": "user", "content": "Query: cats Passage: Cats purr."}]
FAST = {"backoff_base_s": 0.01, "backoff_max_s": 0.05}  # retries without waiting in tests


def run(coro: Coroutine[Any, Any, Any]) -> Any:
    return asyncio.run(coro)


async def chat_once(url: str, params: dict[str, Any] | None = None, **kwargs: Any) -> ChatResult:
    async with LLMClient([url], "fake-model", **{**FAST, **kwargs}) as client:
        return await client.chat(MESSAGES, params)


def dead_url() -> str:
    """A loopback URL where nothing listens."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.fixture(params=["fast", "openai"])
def backend(request: pytest.FixtureRequest) -> str:
    """Both transports must behave alike: the fast one (http://) and the official SDK (https://)."""
    return request.param


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def test_chat_sends_exact_body_and_reads_result(server: FakeOpenAI, backend: str) -> None:
    server.responder = script([Reply("2", usage={"prompt_tokens": 120, "completion_tokens": 1})])
    result = run(chat_once(server.base_url, {"temperature": 0.0, "top_p": 1.0}, backend=backend))
    assert (result.texts, result.finish_reasons, result.logprobs) == (["2"], ["stop"], None)
    assert (result.prompt_tokens, result.completion_tokens, result.cached_tokens) == (120, 1, None)
    assert (result.base_url, result.attempts) == (server.base_url, 1)
    assert result.latency_ms > 0
    assert server.chat_requests[0].body == {
        "model": "fake-model",
        "messages": MESSAGES,
        "temperature": 0.0,
        "top_p": 1.0,
    }


def test_retries_5xx_then_succeeds(server: FakeOpenAI, backend: str) -> None:
    server.responder = script([Fault(500), Fault(503), "3"])
    result = run(chat_once(server.base_url, backend=backend))
    assert (result.text, result.attempts) == ("3", 3)
    assert len(server.chat_requests) == 3


def test_429_retry_after_is_honoured(server: FakeOpenAI, backend: str) -> None:
    server.responder = script([Fault(429, retry_after="1"), "1"])
    result = run(chat_once(server.base_url, backend=backend))
    assert (result.text, result.attempts) == ("1", 2)
    # Timed where the server received the two requests, so client start-up and shutdown (slow on a loaded
    # machine) are not in it. The lower bound is exact: the retry cannot arrive before the header's 1 s
    # (the backoff would be at most 50 ms). The upper bound only has to catch a wait of another order (the
    # header read as minutes, a cap or a backoff added on top), so it leaves seconds of slack for load.
    first, retry = server.chat_requests
    waited = retry.received_at - first.received_at
    assert 1.0 <= waited < 3.0


def test_gives_up_after_max_retries(server: FakeOpenAI, backend: str) -> None:
    server.responder = script([Fault(500)] * 3)
    with pytest.raises(BackendError) as caught:
        run(chat_once(server.base_url, max_retries=2, backend=backend))
    assert str(caught.value) == f"{server.base_url}: HTTP 500: fake fault 500 (gave up after 3 attempts)"


def test_4xx_is_not_retried(server: FakeOpenAI, backend: str) -> None:
    server.responder = script([Fault(400, body={"error": {"message": "max_tokens is too large"}}), "2"])
    with pytest.raises(BackendError) as caught:
        run(chat_once(server.base_url, backend=backend))
    assert str(caught.value) == f"{server.base_url} rejected the request: HTTP 400: max_tokens is too large"
    assert len(server.chat_requests) == 1


@pytest.mark.parametrize(
    "fault",
    [
        Fault(408),  # request timeout from a proxy
        Fault(409),  # conflict: vLLM under load
        Fault(502),  # bad gateway
        Fault(drop=True),  # connection dropped without an answer
    ],
)
def test_retryable_failures(server: FakeOpenAI, fault: Fault) -> None:
    server.responder = script([fault, "0"])
    assert run(chat_once(server.base_url)).attempts == 2


def test_timeout_is_retried(server: FakeOpenAI, backend: str) -> None:
    server.responder = script([Reply("1", delay_s=1.0), "2"])
    result = run(chat_once(server.base_url, timeout_s=0.3, backend=backend))
    assert (result.text, result.attempts) == ("2", 2)


def test_budget_stops_before_sending(server: FakeOpenAI) -> None:
    async def go() -> list[str]:
        async with LLMClient([server.base_url], "fake-model", budget=3, **FAST) as client:
            texts = [(await client.chat(MESSAGES)).text for _ in range(3)]
            with pytest.raises(BackendError) as caught:
                await client.chat(MESSAGES)
            assert client.requests_sent == 3
            return texts + [str(caught.value)]

    *_, message = run(go())
    assert message == "request budget of 3 reached (3 requests sent); raise --request-budget to go on"
    assert len(server.chat_requests) == 3


def test_budget_counts_retries(server: FakeOpenAI) -> None:
    server.responder = script([Fault(500), Fault(500), "1"])
    with pytest.raises(BackendError, match="^request budget of 2 reached"):
        run(chat_once(server.base_url, budget=2))
    assert len(server.chat_requests) == 2


def test_unreachable_at_start_is_one_clear_error(backend: str) -> None:
    url = dead_url()

    async def check() -> None:
        async with LLMClient([url], "my-model", backend=backend) as client:
            await client.check_ready()

    with pytest.raises(BackendError) as caught:
        run(check())
    message = str(caught.value)
    assert message.startswith(f"cannot reach {url}: ")
    assert message.endswith("; is the server running? start it with `vllm serve my-model` or set --base-url")
    assert "\n" not in message


def test_unreachable_during_chat(backend: str) -> None:
    url = dead_url()
    with pytest.raises(BackendError) as caught:
        run(chat_once(url, max_retries=1, backend=backend))
    assert str(caught.value).startswith(f"cannot reach {url}: ")
    assert "(2 attempts); is the server running? start it with `vllm serve fake-model`" in str(caught.value)


def test_check_ready_lists_models(backend: str) -> None:
    async def check(url: str, model: str) -> dict[str, list[str]]:
        async with LLMClient([url], model, backend=backend) as client:
            return await client.check_ready()

    with FakeOpenAI(models=["fake-model", "other"]) as fake:
        assert run(check(fake.base_url, "fake-model")) == {fake.base_url: ["fake-model", "other"]}
        with pytest.raises(BackendError) as caught:
            run(check(fake.base_url, "llama-3"))
    assert str(caught.value) == f"{fake.base_url} does not serve model 'llama-3'; it serves: fake-model, other"


def test_api_key_sent_but_never_shown(server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch, backend: str) -> None:
    monkeypatch.setenv("PERAS_TEST_KEY", "sk-secret-123")
    server.responder = script(["2", Fault(401, body={"error": {"message": "bad key"}})])

    async def go() -> tuple[str, str, str]:
        async with LLMClient([server.base_url], "fake-model", api_key_env="PERAS_TEST_KEY", backend=backend) as client:
            result = await client.chat(MESSAGES)
            with pytest.raises(BackendError) as caught:
                await client.chat(MESSAGES)
            return repr(client), repr(result), str(caught.value)

    client_repr, result_repr, error = run(go())
    assert server.chat_requests[0].headers["authorization"] == "Bearer sk-secret-123"
    assert error == (
        f"{server.base_url} rejected the request: HTTP 401: bad key "
        "(the API key comes from $PERAS_TEST_KEY, which is set)"
    )
    assert all("sk-secret" not in text for text in (client_repr, result_repr, error))


def test_unset_key_named_on_401(server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PERAS_TEST_KEY", raising=False)
    server.responder = script([Fault(401, body={"error": {"message": "no key"}})])
    with pytest.raises(BackendError, match=r"\(the API key comes from \$PERAS_TEST_KEY, which is not set\)$"):
        run(chat_once(server.base_url, api_key_env="PERAS_TEST_KEY"))
    assert "authorization" not in server.chat_requests[0].headers


def test_load_balanced_across_two_servers() -> None:
    with (
        FakeOpenAI(lambda r: Reply("1", delay_s=0.01)) as a,
        FakeOpenAI(lambda r: Reply("2", delay_s=0.01)) as b,
    ):

        async def go() -> list[ChatResult]:
            async with LLMClient([a.base_url, b.base_url], "fake-model", concurrency=64) as client:
                together = await asyncio.gather(*(client.chat(MESSAGES) for _ in range(40)))
                one_by_one = [await client.chat(MESSAGES) for _ in range(10)]
                return together + one_by_one

        results = run(go())
    assert (len(a.chat_requests), len(b.chat_requests)) == (25, 25)
    assert {r.base_url for r in results} == {a.base_url, b.base_url}


def test_failing_server_cools_down() -> None:
    with FakeOpenAI(lambda r: Fault(500)) as bad, FakeOpenAI() as good:

        async def go() -> list[ChatResult]:
            async with LLMClient(
                [bad.base_url, good.base_url], "fake-model", fail_threshold=2, cooldown_s=60, **FAST
            ) as client:
                return [await client.chat(MESSAGES) for _ in range(10)]

        results = run(go())
    assert {r.base_url for r in results} == {good.base_url}
    assert len(bad.chat_requests) == 2  # then skipped for the cool-down
    assert len(good.chat_requests) == 10


def test_concurrency_never_exceeds_bound(server: FakeOpenAI) -> None:
    server.responder = lambda request: Reply("2", delay_s=0.05)

    async def go() -> None:
        async with LLMClient([server.base_url], "fake-model", concurrency=4) as client:
            await asyncio.gather(*(client.chat(MESSAGES) for _ in range(40)))

    run(go())
    assert server.peak_in_flight == 4
    assert len(server.chat_requests) == 40


def test_logprobs_passthrough(server: FakeOpenAI, backend: str) -> None:
    server.responder = script(["2"])
    result = run(chat_once(server.base_url, {"logprobs": True, "top_logprobs": 4, "max_tokens": 1}, backend=backend))
    assert server.chat_requests[0].body["top_logprobs"] == 4
    assert result.logprobs is not None
    (token,) = result.logprobs[0]
    assert [t["token"] for t in token["top_logprobs"]] == ["2", "0", "1", "3"]
    scores = label_logprob_scores(token["top_logprobs"])
    assert scores.p_chosen == pytest.approx(0.7)
    assert scores.expected_score == pytest.approx(2 * 0.7 + 0.1 + 3 * 0.1)


def test_n_choices(server: FakeOpenAI) -> None:
    server.responder = script([["1", "2", "3"]])
    result = run(chat_once(server.base_url, {"n": 3, "temperature": 0.7}))
    assert (result.texts, result.text) == (["1", "2", "3"], "1")
    assert server.chat_requests[0].body["n"] == 3


def test_extra_body_joins_the_request(server: FakeOpenAI, backend: str) -> None:
    run(chat_once(server.base_url, {"seed": 7, "extra_body": {"cache_prompt": True}}, backend=backend))
    body = server.chat_requests[0].body
    assert (body["seed"], body["cache_prompt"], "extra_body" in body) == (7, True, False)


@pytest.mark.parametrize(
    ("reply", "cached"),
    [
        # OpenAI and vLLM report cached prompt tokens in usage
        (
            Reply(
                "2",
                usage={
                    "prompt_tokens": 10,
                    "completion_tokens": 1,
                    "prompt_tokens_details": {"cached_tokens": 8},
                },
            ),
            8,
        ),
        # llama.cpp's server reports them in its own timings block
        (Reply("2", extra={"timings": {"cache_n": 17, "prompt_n": 3}}), 17),
        # servers that say nothing
        (Reply("2"), None),
    ],
)
def test_cached_tokens(server: FakeOpenAI, reply: Reply, cached: int | None) -> None:
    server.responder = script([reply])
    assert run(chat_once(server.base_url)).cached_tokens == cached


@pytest.mark.parametrize(
    "odd",
    [
        {"usage": "n/a"},
        {"usage": {"prompt_tokens": "10", "completion_tokens": 1.5, "prompt_tokens_details": ["cached"]}},
        {"usage": {"prompt_tokens": -1, "completion_tokens": True}, "timings": 17},
    ],
)
def test_an_odd_usage_block_loses_the_counts_not_the_answer(server: FakeOpenAI, odd: dict[str, Any]) -> None:
    # Counts that are not whole numbers are not said (the warehouse keeps them as integers); the text is read.
    server.responder = script([Reply("2", extra=odd)])
    result = run(chat_once(server.base_url))
    assert (result.text, result.prompt_tokens, result.completion_tokens, result.cached_tokens) == (
        "2",
        None,
        None,
        None,
    )


def test_malformed_200_is_retried_then_reported(server: FakeOpenAI) -> None:
    server.responder = script([Fault(200, body="<html>proxy</html>")] * 2)
    with pytest.raises(
        BackendError, match=r"HTTP 200 but not a chat completion: b'<html>proxy</html>' \(gave up after 2"
    ):
        run(chat_once(server.base_url, max_retries=1))


def test_unknown_parameter_is_usage_error(server: FakeOpenAI) -> None:
    with pytest.raises(UsageError, match="^unknown request parameter top_k; put server-specific ones in extra_body$"):
        run(chat_once(server.base_url, {"top_k": 5}))
    assert server.chat_requests == []


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "2"}, 2.0),  # seconds
        ({"retry-after": "0.5"}, 0.5),  # fractional seconds
        ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5),  # OpenAI's millisecond header wins
        ({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, 0.0),  # a date in the past: go now
        ({"retry-after": "soon"}, None),  # unreadable: fall back to backoff
        ({"retry-after-ms": "x", "retry-after": "3"}, 3.0),  # an unreadable header does not hide a good one
        ({}, None),  # absent
    ],
)
def test_retry_after_values(headers: dict[str, str], expected: float | None) -> None:
    assert retry_after_s(headers) == expected


def test_retry_after_future_date() -> None:
    when = email.utils.formatdate(time.time() + 100, usegmt=True)
    assert 98.0 <= retry_after_s({"retry-after": when}) <= 100.0


@pytest.mark.parametrize(
    ("urls", "message"),
    [
        ([], "no LLM base URL given"),  # nothing configured
        (
            ["localhost:8000/v1"],
            "base URL 'localhost:8000/v1' must start with http:// or https://",
        ),  # no scheme
    ],
)
def test_bad_base_urls(urls: list[str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        LLMClient(urls, "m")


def test_instant_answers_are_stable(server: FakeOpenAI) -> None:
    assert instant({"messages": MESSAGES}) == instant({"messages": MESSAGES})
    assert run(chat_once(server.base_url)).text == instant({"messages": MESSAGES})


def test_live_counts_of_answered_failed_and_stopped_requests(server: FakeOpenAI) -> None:
    from peras.progress import Counts

    server.responder = script([Reply("2", usage={"prompt_tokens": 120, "completion_tokens": 1}), Fault(400)])
    counts = Counts("test", 3)

    async def three() -> None:
        async with LLMClient([server.base_url], "fake-model", **FAST) as client:
            client.counts = counts
            await client.chat(MESSAGES)
            with pytest.raises(BackendError):
                await client.chat(MESSAGES)
            server.responder = lambda request: Reply("2", delay_s=5)
            stopped = asyncio.ensure_future(client.chat(MESSAGES))
            await asyncio.sleep(0.2)
            stopped.cancel()
            with pytest.raises(asyncio.CancelledError):
                await stopped

    run(three())
    # the cancelled call was asked, and is neither answered nor failed (a stopped run is not a failing server)
    assert (counts.sent, counts.answered, counts.failed, counts.tokens) == (3, 1, 1, 121)
