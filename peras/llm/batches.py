"""The OpenAI batch file format and Batch API, as hosted providers and vLLM's `run-batch` define them.

An input line is one request: `{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body"}`, where
`body` is exactly what online mode POSTs (`peras.llm.client.chat_body`). An output or error line answers one
`custom_id`: `{"id", "custom_id", "response": {"status_code", "request_id", "body"} | null, "error": ... | null}`
(OpenAI puts `error` as `{"code", "message"}`, vLLM as a string). A file holds at most MAX_LINES lines and
MAX_BYTES bytes (the providers' limits); larger rounds are split.

`BatchAPI` speaks the Files and Batches endpoints through the official SDK: upload (`purpose=batch`), create
(`completion_window=24h`), retrieve, cancel, and a file's content.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, Final, Literal

import orjson

from peras.errors import BackendError, InputError, mask_secrets, remember_secret

ENDPOINT = "/v1/chat/completions"
COMPLETION_WINDOW: Final[Literal["24h"]] = "24h"
MAX_LINES = 50_000
MAX_BYTES = 200 * 1024 * 1024
LIVE_STATUSES = frozenset({"validating", "in_progress", "finalizing", "cancelling"})
DONE_STATUSES = frozenset({"completed", "failed", "expired", "cancelled"})
# Answers to these statuses refuse the request itself (a prompt past the context window); others are asked again.
REQUEST_LEVEL_STATUSES = frozenset({400, 413, 422})
# The error codes of lines peras writes itself: every request of a batch that failed as a whole, and a line of a
# provider's file that cannot be read (both count against the request's retries: it is asked again, then refused).
BATCH_FAILED = "batch_failed"
UNREADABLE_LINE = "unreadable_line"
CUSTOM_ID = re.compile(rb'"custom_id"\s*:\s*"((?:[^"\\]|\\.){1,200})"')


def input_line(custom_id: str, body: dict[str, Any]) -> bytes:
    """One input line (with its newline)."""
    return orjson.dumps({"custom_id": custom_id, "method": "POST", "url": ENDPOINT, "body": body}) + b"\n"


def split_lines(lines: list[bytes], max_lines: int = MAX_LINES, max_bytes: int = MAX_BYTES) -> list[list[bytes]]:
    """Lines in files of at most `max_lines` lines and `max_bytes` bytes, in order."""
    files: list[list[bytes]] = []
    size = 0
    for line in lines:
        if not files or len(files[-1]) >= max_lines or size + len(line) > max_bytes:
            files.append([])
            size = 0
        files[-1].append(line)
        size += len(line)
    return files


@dataclass(frozen=True, slots=True)
class OutputLine:
    """One answered line: its custom_id, the HTTP status, the chat completion (if any) and the error (if any)."""

    custom_id: str
    status_code: int | None
    body: dict[str, Any] | None
    error_code: str | None
    error_message: str | None


def read_output_line(raw: bytes, path: object, line: int) -> OutputLine:
    """An output or error line, or InputError naming the file and line (a truncated or foreign line)."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise InputError(f"not a JSON line (truncated?): {exc}", path, line) from exc
    if not isinstance(data, dict) or not isinstance(data.get("custom_id"), str) or "response" not in data:
        raise InputError("not a batch output line (no custom_id and response)", path, line)
    response, error = data.get("response"), data.get("error")
    if response is not None and not isinstance(response, dict):
        raise InputError("its response is not an object", path, line)
    body = (response or {}).get("body")
    status = (response or {}).get("status_code")
    code, message = _error(error, body if status != 200 else None)
    if status == 200 and not (isinstance(body, dict) and isinstance(body.get("choices"), list)):
        raise InputError("status 200 but its body is no chat completion", path, line)
    return OutputLine(data["custom_id"], status, body if status == 200 else None, code, message)


def read_collected_line(raw: bytes, path: object, line: int) -> OutputLine | None:
    """A line of a provider's output or error file; one that cannot be read is kept as an unreadable line of its
    custom_id (asked again), or None when not even its custom_id can be read (its request has no line: asked
    again too). The rest of the file is kept either way."""
    try:
        return read_output_line(raw, path, line)
    except InputError as exc:
        found = CUSTOM_ID.search(raw)
        if found is None:
            return None
        return OutputLine(found[1].decode(errors="replace"), None, None, UNREADABLE_LINE, mask_secrets(str(exc))[:500])


def batch_errors(batch: dict[str, Any]) -> str:
    """Why a batch failed, as the provider says it (`errors.data`: code and message), masked, on one line."""
    data = (batch.get("errors") or {}).get("data") if isinstance(batch.get("errors"), dict) else None
    reasons = [
        ": ".join(str(part) for part in (item.get("code"), item.get("message")) if part)
        for item in (data if isinstance(data, list) else [])
        if isinstance(item, dict)
    ]
    return mask_secrets("; ".join(reason for reason in reasons if reason) or "no reason given")[:500]


def _error(error: Any, body: Any) -> tuple[str | None, str | None]:
    """(code, message) of a line's error: OpenAI's object, vLLM's string, or the error body of a non-200 answer."""
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        error = error or body["error"]
    if error is None:
        return None, None
    if isinstance(error, dict):
        code = error.get("code")
        return (str(code) if code is not None else None), mask_secrets(str(error.get("message") or ""))[:500]
    return None, mask_secrets(str(error))[:500]


class BatchAPI:
    """Files and Batches of one OpenAI-compatible base URL (the key from the named environment variable)."""

    def __init__(self, base_url: str, api_key_env: str | None, timeout_s: float = 120.0) -> None:
        import openai  # imported here: about a second of every command's start (peras/llm/transport.py)

        key = os.environ.get(api_key_env) if api_key_env else None
        remember_secret(key)
        self.base_url = base_url.rstrip("/")
        self._client = openai.OpenAI(base_url=self.base_url, api_key=key or "EMPTY", timeout=timeout_s, max_retries=3)

    def upload(self, data: bytes, filename: str) -> str:
        """Upload an input file (purpose batch); its file id."""
        return str(self._call(lambda: self._client.files.create(file=(filename, data), purpose="batch")).id)

    def create(self, input_file_id: str, metadata: dict[str, str]) -> dict[str, Any]:
        """Create a batch over an uploaded file; the batch object."""
        return self._call(
            lambda: self._client.batches.create(
                input_file_id=input_file_id,
                endpoint=ENDPOINT,  # type: ignore[arg-type]
                completion_window=COMPLETION_WINDOW,
                metadata=metadata,
            )
        ).model_dump()

    def list_batches(self) -> list[dict[str, Any]]:
        """Every batch of the account at this base URL, newest first (the SDK follows the pages)."""
        return self._call(lambda: [batch.model_dump() for batch in self._client.batches.list(limit=100)])  # type: ignore[no-any-return]

    def retrieve(self, batch_id: str) -> dict[str, Any]:
        """The batch object as it is now."""
        return self._call(lambda: self._client.batches.retrieve(batch_id)).model_dump()

    def cancel(self, batch_id: str) -> dict[str, Any]:
        """Ask the provider to cancel a batch (it moves to cancelling, then cancelled)."""
        return self._call(lambda: self._client.batches.cancel(batch_id)).model_dump()

    def content(self, file_id: str) -> bytes:
        """An output or error file's bytes."""
        return bytes(self._call(lambda: self._client.files.content(file_id)).content)

    def close(self) -> None:
        """Close the connections."""
        self._client.close()

    def _call(self, call: Any) -> Any:
        import openai

        try:
            return call()
        except openai.APIStatusError as exc:
            # from None: the SDK's error quotes the provider's whole body (a gateway's may hold the key), and a chained
            # cause reaches Prefect's logs and states unmasked
            raise BackendError(
                f"{self.base_url}: the Batch API answered HTTP {exc.status_code}: {mask_secrets(str(exc.message))}"
            ) from None
        except openai.APIConnectionError as exc:
            raise BackendError(mask_secrets(f"cannot reach the Batch API at {self.base_url}: {exc}")) from None
