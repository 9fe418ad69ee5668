"""One async client for every OpenAI-compatible backend: only the base URLs, model and key differ.

    client = LLMClient(["http://127.0.0.1:8000/v1"], "Qwen/Qwen2.5-7B-Instruct", concurrency=32)
    await client.check_ready()
    result = await client.chat(messages, {"temperature": 0.0, "top_p": 1.0, "max_tokens": 8})
    await client.aclose()

What it guarantees:
- Several base URLs serving one model share the load: each request goes to the URL with the fewest
  requests in flight (ties in turn). A URL that fails `fail_threshold` times in a row (connection error,
  timeout, 5xx, 408) is skipped for `cooldown_s`, unless every URL is cooling down.
- At most `concurrency` requests are in flight per URL from this client; with `slots_dir`, at most `concurrency`
  per URL from every PERAS process on the machine together (peras/llm/limits.py), held per request.
- Timeouts, connection errors, 5xx, 408, 409 and 429 are retried up to `max_retries` times with
  exponential backoff and jitter (`backoff_base_s * 2**k`, capped at `backoff_max_s`, times 0.5-1.0);
  a Retry-After header (seconds or an HTTP date) is waited out instead. Other 4xx fail at once.
- `budget` caps the HTTP requests a run sends, retries included: `budget_spent` were sent by its earlier
  attempts, the rest are counted when a request is handed to the connection (never for requests that wait
  and are not sent); the request that would exceed it is not sent and raises BudgetReached. `check_ready()`
  does not count. Whatever `chat()` raises carries `http_requests`, what that call sent (the engine records
  it, so that a resume counts requests that got no answer).
- `deadline_s` caps the whole time one `chat()` may take, waits and retries included: a Retry-After that would pass
  it is not waited out, and a retry starts only if its backoff and its full timeout fit before it; otherwise the
  request fails with one line saying what it waited for.
  Waits longer than `notice_after_s` are announced through `on_notice` (the CLI prints them).
- The API key is read from the environment variable the caller names; it is never logged and appears in
  no returned object or repr. Neither does a `user:password@` part of a base URL: messages name the URL
  without it.
Every failure is one BackendError line naming the URL and what went wrong.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from peras.errors import BackendError, BudgetReached, RequestRejected, UsageError, mask_secrets, remember_secret
from peras.llm.limits import EndpointSlots
from peras.llm.priority import PrioritySlots, item_step
from peras.llm.responses import ChatResult, chat_body, decode_chat, error_message, retry_after_s
from peras.llm.transport import Backend, TransportError, make_transport
from peras.settings import without_userinfo

__all__ = ["ChatResult", "LLMClient", "chat_body"]

RETRY_STATUSES = frozenset({408, 409, 429})
REQUEST_LEVEL_STATUSES = frozenset({400, 413, 422})
MAX_RETRY_AFTER_S = 600.0  # a server asking for more than this is treated as asking for this
_log = logging.getLogger(__name__)


class _Endpoint:
    __slots__ = ("url", "transport", "semaphore", "slots", "in_flight", "failures", "cooldown_until")

    def __init__(self, url: str, transport: Any, concurrency: int, slots_dir: Path | None) -> None:
        self.url = url  # without credentials: it names the endpoint in every message, log and slot file
        self.transport = transport
        self.semaphore = PrioritySlots(concurrency)  # an item's follow-up request before a new item's first
        self.slots = EndpointSlots(slots_dir, url, concurrency) if slots_dir is not None else None
        self.in_flight = 0
        self.failures = 0
        self.cooldown_until = 0.0


class LLMClient:
    """Chat completions against one model behind one or more OpenAI-compatible base URLs."""

    def __init__(
        self,
        base_urls: list[str],
        model: str,
        api_key_env: str | None = None,
        concurrency: int = 8,
        timeout_s: float = 120.0,
        max_retries: int = 6,
        budget: int | None = None,
        *,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 30.0,
        cooldown_s: float = 30.0,
        fail_threshold: int = 3,
        backend: Backend = "auto",
        slots_dir: Path | None = None,
        deadline_s: float | None = None,
        on_notice: Callable[[str], None] | None = None,
        notice_after_s: float = 10.0,
        budget_spent: int = 0,
    ) -> None:
        check_client(base_urls, concurrency)
        self.model = model
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.budget = budget
        self.budget_spent = budget_spent
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self.cooldown_s = cooldown_s
        self.fail_threshold = fail_threshold
        self.deadline_s = deadline_s
        self.on_notice = on_notice
        self.notice_after_s = notice_after_s
        self._api_key_env = api_key_env
        api_key = os.environ.get(api_key_env) if api_key_env else None
        remember_secret(api_key)  # masked in every message from now on, whatever a server echoes back
        self._key_given = bool(api_key)
        self._endpoints = [
            _Endpoint(
                without_userinfo(url.rstrip("/")),
                make_transport(url.rstrip("/"), api_key, timeout_s, backend),
                concurrency,
                slots_dir,
            )
            for url in dict.fromkeys(base_urls)
        ]
        self._requests_sent = 0
        self._turn = 0
        # Live counts of the calls (peras.progress.Counts: request_sent, then request_answered or request_failed;
        # a cancelled call is neither), read by the progress line and the Prefect artifact; None: not counted.
        self.counts: Any = None
        # Told when a request starts (True) and ends (False) a sleep before a retry, holding no slot meanwhile: the
        # engine puts another item to work (tasks/engine/workers.py, Workers); None: nobody is told.
        self.on_wait: Callable[[bool], None] | None = None

    @classmethod
    def from_settings(cls, settings: Any, base_urls: list[str] | None = None) -> LLMClient:
        """A client from `peras.settings.Settings`; `base_urls` overrides them (e.g. the embedded server)."""
        if not settings.model:
            raise UsageError("no model given: set --model (the name the server serves)")
        return cls(
            base_urls or settings.base_urls,
            settings.model,
            settings.api_key_env,
            settings.concurrency,
            settings.request_timeout_s,
            settings.max_retries,
            settings.request_budget,
        )

    @property
    def requests_sent(self) -> int:
        """HTTP chat requests sent so far, retries included."""
        return self._requests_sent

    @property
    def base_urls(self) -> list[str]:
        """The base URLs, without trailing slashes."""
        return [endpoint.url for endpoint in self._endpoints]

    def __repr__(self) -> str:
        return f"LLMClient(model={self.model!r}, base_urls={self.base_urls!r})"

    async def __aenter__(self) -> LLMClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close every connection."""
        for endpoint in self._endpoints:
            await endpoint.transport.aclose()
            if endpoint.slots is not None:
                endpoint.slots.cool()  # no slot stays locked past the client (the loop may end before the turn's)

    async def check_ready(self, timeout_s: float = 10.0) -> dict[str, list[str]]:
        """List each URL's models (GET /models); BackendError unless every URL serves `model`."""
        served: dict[str, list[str]] = {}
        for endpoint in self._endpoints:
            try:
                status, _, content = await endpoint.transport.models(min(timeout_s, self.timeout_s))
            except TransportError as exc:
                raise BackendError(f"cannot reach {endpoint.url}: {exc.detail}; {self._start_hint()}") from exc
            if status != 200:
                raise BackendError(
                    f"{endpoint.url}/models answered HTTP {status}: {error_message(content)}{self._key_hint(status)}"
                )
            try:
                ids = [str(item["id"]) for item in json.loads(content)["data"]]
            except (ValueError, KeyError, TypeError) as exc:
                raise BackendError(f"{endpoint.url}/models did not return an OpenAI model list") from exc
            if self.model not in ids:
                listed = ", ".join(ids[:20]) + (f" ... ({len(ids)} in all)" if len(ids) > 20 else "")
                raise BackendError(
                    f"{endpoint.url} does not serve model {self.model!r}; it serves: {listed or 'nothing'}"
                )
            served[endpoint.url] = ids
        return served

    async def chat(self, messages: list[dict[str, str]], params: dict[str, Any] | None = None) -> ChatResult:
        """One chat completion, retried and balanced as the module docstring says; BackendError on failure."""
        sent = [0]
        counts = self.counts
        if counts is not None:
            counts.request_sent()
        try:
            result = await self._chat(messages, params or {}, sent)
        except BaseException as exc:
            with contextlib.suppress(AttributeError):  # what it cost, for the run-wide budget
                exc.http_requests = sent[0]  # type: ignore[attr-defined]
            if counts is not None and not isinstance(exc, asyncio.CancelledError):  # stopped: not a failed request
                counts.request_failed()
            raise
        if counts is not None:
            counts.request_answered(result)
        return result

    async def _chat(self, messages: list[dict[str, str]], params: dict[str, Any], sent: list[int]) -> ChatResult:
        body = self._body(messages, params)
        wants_logprobs = bool(params.get("logprobs"))
        deadline = time.monotonic() + self.deadline_s if self.deadline_s else None
        attempt = 0
        while True:
            attempt += 1
            endpoint = self._pick()
            try:
                status, headers, content, latency_ms = await self._send(endpoint, body, sent)
            except TransportError as exc:
                self._failed(endpoint)
                if attempt > self.max_retries:
                    raise BackendError(self._transport_message(endpoint, exc, attempt)) from exc
                delay = self._backoff(attempt)
                problem, asked = exc.detail, None
                _log.debug("%s: %s; retry %d in %.2f s", endpoint.url, exc.detail, attempt, delay)
            else:
                if status == 200:
                    result = decode_chat(content, endpoint.url, latency_ms, attempt, wants_logprobs)
                    if result is not None:
                        endpoint.failures = 0
                        return result
                    problem = mask_secrets(f"HTTP 200 but not a chat completion: {content[:200]!r}")
                elif status in RETRY_STATUSES or status >= 500:
                    problem = f"HTTP {status}: {error_message(content)}"
                else:
                    # 400/413/422 refuse this one request (e.g. a passage past the context window): the judge
                    # records it and goes on. 401/403/404 and the like concern every request: the run stops.
                    error = RequestRejected if status in REQUEST_LEVEL_STATUSES else BackendError
                    raise error(
                        f"{endpoint.url} rejected the request: HTTP {status}: {error_message(content)}"
                        f"{self._key_hint(status)}"
                    )
                if status != 429 and status != 409:
                    self._failed(endpoint)  # rate limits say nothing about the server's health
                if attempt > self.max_retries:
                    raise BackendError(f"{endpoint.url}: {problem} (gave up after {attempt} attempts)")
                asked = retry_after_s(headers)
                delay = min(asked, MAX_RETRY_AFTER_S) if asked is not None else self._backoff(attempt)
                _log.debug("%s: %s; retry %d in %.2f s", endpoint.url, problem, attempt, delay)
            await self._wait(endpoint, problem, delay, asked, deadline, attempt)

    async def _send(self, endpoint: _Endpoint, body: dict[str, Any], sent: list[int]) -> tuple[int, Any, bytes, float]:
        """One HTTP request through the URL's slots; it counts against the budget (and in `sent`) once it is sent."""
        endpoint.in_flight += 1
        try:
            if not endpoint.semaphore.try_acquire():  # per request: no coroutine when a slot is free (the usual)
                await endpoint.semaphore.acquire(item_step.get())
            try:
                index = None
                if endpoint.slots is not None:
                    index = endpoint.slots.try_acquire()  # no coroutine when a slot is free
                    if index is None:
                        index = await endpoint.slots.acquire()
                try:
                    spent = self.budget_spent + self._requests_sent
                    if self.budget is not None and spent >= self.budget:
                        raise BudgetReached(
                            f"request budget of {self.budget} reached ({spent} requests sent);"
                            " raise --request-budget to go on"
                        )
                    self._requests_sent += 1
                    sent[0] += 1
                    started = time.perf_counter()
                    status, headers, content = await endpoint.transport.chat(body)
                    return status, headers, content, (time.perf_counter() - started) * 1000.0
                finally:
                    if index is not None:
                        endpoint.slots.release(index)  # type: ignore[union-attr]
            finally:
                endpoint.semaphore.release()
        finally:
            endpoint.in_flight -= 1

    async def _wait(
        self,
        endpoint: _Endpoint,
        problem: str,
        delay: float,
        asked: float | None,
        deadline: float | None,
        attempt: int,
    ) -> None:
        """Sleep before a retry, unless that would pass the request's deadline; announce long waits.

        `asked` is the server's Retry-After, if it sent one (`delay` is at most MAX_RETRY_AFTER_S of it)."""
        why = f"the server asked to retry after {asked:,.0f} s (Retry-After)" if asked is not None else None
        # A retry starts only if it can still get its full timeout before the deadline (else chat() would outlast it).
        retry_ends = delay if asked is not None else delay + self.timeout_s
        if deadline is not None and time.monotonic() + retry_ends > deadline:
            attempts = f"{attempt} attempt{'s' if attempt > 1 else ''}"
            late = why + ", past" if why else f"the next retry (in {delay:,.0f} s) would pass"
            raise BackendError(
                f"{endpoint.url}: {problem}; gave up after {attempts}: {late} the {self.deadline_s:,.0f} s"
                " a request may take (PERAS_REQUEST_DEADLINE_S)"
            )
        if delay >= self.notice_after_s and self.on_notice is not None:
            said = f" {why}:" if why else ""
            self.on_notice(f"{endpoint.url}: {problem};{said} waiting {delay:,.0f} s before retry {attempt}")
        on_wait = self.on_wait
        if on_wait is not None:
            on_wait(True)
        try:
            await asyncio.sleep(delay)
        finally:
            if on_wait is not None:
                on_wait(False)

    def _body(self, messages: list[dict[str, str]], params: dict[str, Any]) -> dict[str, Any]:
        return chat_body(self.model, messages, params)

    def _pick(self) -> _Endpoint:
        endpoints = self._endpoints
        if len(endpoints) == 1:
            return endpoints[0]
        now = time.monotonic()
        ready = [e for e in endpoints if e.cooldown_until <= now] or [min(endpoints, key=lambda e: e.cooldown_until)]
        fewest = min(e.in_flight for e in ready)
        tied = [e for e in ready if e.in_flight == fewest]
        self._turn += 1
        return tied[self._turn % len(tied)]

    def _failed(self, endpoint: _Endpoint) -> None:
        endpoint.failures += 1
        if endpoint.failures >= self.fail_threshold and len(self._endpoints) > 1:
            if endpoint.cooldown_until <= time.monotonic():
                _log.warning(
                    "%s failed %d times in a row; skipping it for %g s",
                    endpoint.url,
                    endpoint.failures,
                    self.cooldown_s,
                )
            endpoint.cooldown_until = time.monotonic() + self.cooldown_s

    def _backoff(self, attempt: int) -> float:
        return min(self.backoff_max_s, self.backoff_base_s * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)

    def _start_hint(self) -> str:
        return f"is the server running? start it with `vllm serve {self.model}` or set --base-url"

    def _key_hint(self, status: int) -> str:
        if status not in (401, 403) or not self._api_key_env:
            return ""
        state = "is set" if self._key_given else "is not set"
        return f" (the API key comes from ${self._api_key_env}, which {state})"

    def _transport_message(self, endpoint: _Endpoint, exc: TransportError, attempts: int) -> str:
        if exc.kind == "connect":
            return f"cannot reach {endpoint.url}: {exc.detail} ({attempts} attempts); {self._start_hint()}"
        return f"{endpoint.url}: {exc.detail} (gave up after {attempts} attempts)"


def check_client(base_urls: list[str], concurrency: int) -> None:
    """At least one base URL, each http:// or https://, and at least one request in flight: else a UsageError."""
    if not base_urls:
        raise UsageError("no LLM base URL given: set --base-url (e.g. http://127.0.0.1:8000/v1)")
    bad = [url for url in base_urls if not url.startswith(("http://", "https://"))]
    if bad:
        raise UsageError(f"base URL {bad[0]!r} must start with http:// or https://")
    if concurrency < 1:
        raise UsageError(f"concurrency must be at least 1, not {concurrency}")
