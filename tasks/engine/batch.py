"""Batch mode: the engine's other way to ask, through the OpenAI Batch API or vLLM's offline `run-batch` files.

A pass of the engine in batch mode sends nothing. A request answered in the warehouse is reused as online; a
request whose answer came back in a collected batch (llm_batch_lines) is read, regenerated, journaled and loaded
exactly as an online answer would be, by the same stage code; any other request is collected into the next round
(unless it is already in a live batch, whichever run submitted it) and its item waits (`Deferred`): no outcome is
journaled for it, so the next pass plans it again. After the pass the round is submitted: uploaded and created at
the Batch API (`--base-url`), or recorded for `peras batch export` (no base URL). A label then its confidence take
two rounds; a regeneration of an unreadable answer, or a line the batch did not run (expired, cancelled, failed),
one more. A run ends when no item waits.

Everything that lets a run resume is in the warehouse (V540): the batches and their states, which request and
attempt each line is, the lines that came back. Nothing is submitted twice for a request that has an answer or is
in a live batch; a killed process resumes by polling the batches it finds.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from peras.errors import BackendError
from peras.llm.batches import BATCH_FAILED, REQUEST_LEVEL_STATUSES, UNREADABLE_LINE
from peras.llm.client import chat_body
from peras.llm.responses import decode_chat
from peras.settings import Settings
from peras.sql import run_sql
from peras.warehouse import connect
from tasks.engine.spec import Answer, Ask, Tried, regeneration_params


class Deferred(Exception):
    """The request's answer comes in a later batch round: its item waits."""


@dataclass(frozen=True, slots=True)
class Line:
    """A collected line of one request's attempt."""

    status_code: int | None
    body: dict[str, Any] | None
    error_code: str | None
    error_message: str | None

    @property
    def failed(self) -> bool:
        """The line ran and failed (a server error, a refusal), came back unreadable, or its whole batch failed;
        not a line the batch never ran (expired, cancelled)."""
        if self.status_code is None:
            return self.error_code in (BATCH_FAILED, UNREADABLE_LINE)
        return self.status_code != 200


def custom_id(request_id: str, attempt: int) -> str:
    """A line's custom_id: the request id, with -r<k> for its regeneration k."""
    return request_id if attempt == 0 else f"{request_id}-r{attempt}"


@dataclass
class BatchRound:
    """What one engine pass in batch mode knows (collected lines, live requests) and what it collects to submit."""

    model: str
    lines: dict[tuple[str, int], list[Line]]
    live: set[tuple[str, int]]
    max_retries: int
    pending: dict[str, tuple[str, int, dict[str, Any]]] = field(default_factory=dict)  # custom_id -> request, body

    def answer(self, engine: Any, spec: Ask, request_id: str, prompt_hash: str) -> Answer:
        """The request's answer from its collected lines (journaled by the engine as online), or Deferred."""
        tried = Tried(spec, request_id, prompt_hash)
        result = parsed = None
        for attempt in range(1 + spec.regenerations):
            params = regeneration_params(spec.params, attempt)
            lines = self.lines.get((request_id, attempt), [])
            answered = next((line for line in lines if line.status_code == 200), None)
            refused = next((line for line in lines if line.status_code in REQUEST_LEVEL_STATUSES), None)
            failed = [line for line in lines if line.failed]
            if answered is None and refused is None and len(failed) <= self.max_retries:
                self._need(spec, request_id, attempt, params)
            if answered is None and refused is None and failed[-1].error_code == BATCH_FAILED:
                n_failed = sum(line.error_code == BATCH_FAILED for line in failed)
                raise BackendError(  # the provider fails whole batches: stop the run, as online an endpoint that fails
                    f"the Batch API failed {n_failed} batch(es) in a row; it says: {failed[-1].error_message};"
                    " once it answers again, run the same command with --retry-failed"
                )
            tried.sent.append(params)
            tried.http += sum(line.status_code is not None for line in lines)  # ran, failed ones too (online: retries)
            if answered is None:
                raise engine.record_refusal(tried, _why(refused or failed[-1]))
            result = decode_chat(json.dumps(answered.body).encode(), "batch", 0.0, 1, bool(params.get("logprobs")))
            if result is None:  # status 200, but no choice with a message (as online: not a chat completion)
                raise engine.record_refusal(tried, "the batch answered HTTP 200 but not a chat completion")
            tried.texts.append(result.text)
            parsed = spec.parse(result.text)
            if parsed.ok:
                break
        assert result is not None
        return engine.record_answer(tried, result, parsed)

    def _need(self, spec: Ask, request_id: str, attempt: int, params: dict[str, Any]) -> None:
        """Submit this attempt in the next round (unless a live batch holds it), and wait for it."""
        if (request_id, attempt) not in self.live:
            body = chat_body(self.model, spec.messages, params)
            self.pending.setdefault(custom_id(request_id, attempt), (request_id, attempt, body))
        raise Deferred


def _why(line: Line) -> str:
    detail = line.error_message or line.error_code or "no detail"
    if line.status_code is None:  # an unreadable line
        return f"the batch answered an unreadable line: {detail}"
    return f"the batch answered HTTP {line.status_code}: {detail}"


def load_round(settings: Settings, model: str, since: datetime | None = None) -> BatchRound:
    """The collected lines and live requests of the model, as the warehouse holds them now. `since` (a call that
    retries failures: when it began): what failed before it is left out, so it is asked again."""
    lines: dict[tuple[str, int], list[Line]] = {}
    with connect(settings.warehouse, read_only=True) as con:
        for request_id, attempt, status, body, code, message, _ in run_sql(
            con, "engine/batch/select_collected_lines", {"model": model, "since": since}
        ).fetchall():
            line = Line(status, json.loads(body) if body else None, code, message)
            lines.setdefault((request_id, attempt), []).append(line)
        live = {(r, a) for r, a in run_sql(con, "engine/batch/select_live_requests", {"model": model}).fetchall()}
    return BatchRound(model, lines, live, settings.max_retries)
