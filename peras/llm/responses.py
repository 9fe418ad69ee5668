"""What goes to and comes back from an OpenAI-compatible server: the chat request's JSON body (`chat_body`), and
reading what the server sent back: the completion, an error, a Retry-After."""

from __future__ import annotations

import email.utils
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson

from peras.errors import UsageError, mask_secrets


@dataclass(slots=True)
class ChatResult:
    """One chat completion: every choice's text, and what the request cost.

    `logprobs` (when asked) holds, per choice, the list of generated tokens as the server sent them:
    `{"token", "logprob", "top_logprobs": [{"token", "logprob"}, ...]}`. `cached_tokens` comes from
    `usage.prompt_tokens_details.cached_tokens` (OpenAI, vLLM, recent llama.cpp) or llama.cpp's
    `timings.cache_n`; None when the server reports neither. `latency_ms` is the successful attempt's.
    """

    texts: list[str]
    finish_reasons: list[str | None]
    logprobs: list[list[dict[str, Any]]] | None
    prompt_tokens: int | None
    completion_tokens: int | None
    cached_tokens: int | None
    latency_ms: float
    base_url: str
    attempts: int

    @property
    def text(self) -> str:
        """The first choice's text."""
        return self.texts[0]

    @property
    def finish_reason(self) -> str | None:
        """The first choice's finish reason."""
        return self.finish_reasons[0]


def _loads(content: bytes) -> Any:
    """JSON, fast; servers that write -Infinity or NaN (logprobs of impossible tokens) take the standard parser."""
    try:
        return orjson.loads(content)
    except orjson.JSONDecodeError:
        return json.loads(content)


def decode_chat(content: bytes, url: str, latency_ms: float, attempts: int, wants_logprobs: bool) -> ChatResult | None:
    """The ChatResult in a 200 body, or None when the body is not a chat completion."""
    try:
        data = _loads(content)
        choices = data["choices"]
        if len(choices) > 1:
            choices = sorted(choices, key=lambda c: c.get("index", 0))
        texts = [_text(c["message"].get("content")) for c in choices]
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    if not texts:
        return None
    # What the answer cost, where the server says it: a count that is not a whole number is not said (a proxy's or
    # a young server's odd usage block must not lose the answer's text, nor reach the warehouse's integer columns).
    usage = _object(data.get("usage"))
    cached = _count(_object(usage.get("prompt_tokens_details")).get("cached_tokens"))
    if cached is None:
        cached = _count(_object(data.get("timings")).get("cache_n"))
    logprobs = [(c.get("logprobs") or {}).get("content") or [] for c in choices] if wants_logprobs else None
    reasons = [c.get("finish_reason") for c in choices]
    # Positional (per request: keywords cost twice as much): texts, finish_reasons, logprobs, prompt_tokens,
    # completion_tokens, cached_tokens, latency_ms, base_url, attempts.
    return ChatResult(
        texts, reasons, logprobs, _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens")), cached,
        latency_ms, url, attempts,
    )  # fmt: skip


def _text(content: Any) -> str:
    """A choice's text: its content when it is a string; anything else (null, a number, a list) reads as no text,
    an unreadable answer (regenerated and recorded as any other), never a crash of the code reading it."""
    return content if type(content) is str else ""


def _object(value: Any) -> dict[str, Any]:
    return value if type(value) is dict else {}


def _count(value: Any) -> int | None:
    if type(value) is int:
        return value if value >= 0 else None
    if type(value) is float and value.is_integer() and value >= 0:
        return int(value)  # 12.0: a whole number, written as a float
    return None


def retry_after_s(headers: dict[str, str]) -> float | None:
    """Seconds to wait from OpenAI's retry-after-ms or Retry-After (seconds or HTTP date); None if absent."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        if name in headers:
            try:
                return max(0.0, float(headers[name]) * scale)
            except ValueError:
                pass
    value = headers.get("retry-after")
    try:
        when = email.utils.parsedate_to_datetime(value) if value else None
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def error_message(content: bytes) -> str:
    """The server's error message on one line, from an OpenAI error body or the raw text, credentials masked.

    A gateway may quote the caller's key back ("Received API Key = sk-..."): masked here, before the text reaches
    an exception, a stored request row or run status, a log line or the terminal.
    """
    try:
        data = json.loads(content)
        error = data.get("error", data) if isinstance(data, dict) else data
        message = error.get("message") if isinstance(error, dict) else error
        text = str(message if message is not None else data)
    except ValueError:
        text = content.decode("utf-8", "replace")
    text = mask_secrets(" ".join(text.split()))
    return (text[:300] + "...") if len(text) > 300 else (text or "(empty body)")


ALLOWED_PARAMS = frozenset(
    {
        "temperature",
        "top_p",
        "max_tokens",
        "max_completion_tokens",
        "n",
        "logprobs",
        "top_logprobs",
        "seed",
        "frequency_penalty",
        "presence_penalty",
        "stop",
        "extra_body",
    }
)


def chat_body(model: str, messages: list[dict[str, str]], params: dict[str, Any]) -> dict[str, Any]:
    """The JSON body of one chat completion: what online mode POSTs and what a batch line carries as `body`."""
    if not params.keys() <= ALLOWED_PARAMS:  # per request: no set built when every key is known (the usual)
        unknown = params.keys() - ALLOWED_PARAMS
        raise UsageError(
            f"unknown request parameter {', '.join(sorted(unknown))}; put server-specific ones in extra_body"
        )
    body: dict[str, Any] = {"model": model, "messages": messages}
    body.update(params)
    extra = body.pop("extra_body", None)
    if extra:
        body.update(extra)  # as the OpenAI SDK does: extra_body keys join the JSON body
    return body
