"""The row the engine journals for one request (tasks/engine/shards.py writes it, sql/<kind>/ loads it)."""

from __future__ import annotations

import time
from typing import Any

from peras.warehouse import now_text
from tasks.engine.spec import RunIdentity, Tried


def request_row(
    identity: RunIdentity,
    tried: Tried,
    result: Any,
    value: float | None,
    status: str,
    reason: str | None,
    logprobs: list[dict[str, Any]] | None,
    confidence: float | None,
) -> dict[str, Any]:
    """A request's journal row: what was asked, every attempt's text and parameters, the last attempt's answer
    (`result`, None when nothing came back) and how it was read (`status`: ok, parse_failure, refused, unanswered)."""
    spec, texts = tried.spec, tried.texts
    return {
        "request_id": tried.request_id,
        "model": identity.model,
        "backend": identity.backend,
        "prompt_hash": tried.prompt_hash,
        "purpose": spec.purpose,
        "params": spec.params,
        "messages": spec.messages,
        "raw_text": result.text if result is not None else None,
        "attempts": len(texts),
        "attempt_texts": texts,
        "attempt_params": tried.sent,
        "parsed_value": value,
        "parsed_confidence": confidence,
        "parse_status": status,
        "parse_reason": reason,
        "logprobs": logprobs,
        "prompt_tokens": result.prompt_tokens if result is not None else None,
        "completion_tokens": result.completion_tokens if result is not None else None,
        "cached_tokens": result.cached_tokens if result is not None else None,
        "latency_ms": (time.perf_counter() - tried.started) * 1000.0,
        "created_at": now_text(),
        "http_requests": tried.http,
    }
