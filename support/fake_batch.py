"""A scripted OpenAI Batch API on the scripted chat server: files, batches, statuses that move, partial outputs.

    with FakeBatchAPI(instant, scripts=[BatchScript(), BatchScript(end="expired", answer_share=0.5)]) as server:
        ...  # peras judge ... --mode batch --base-url server.base_url
        assert server.submitted_ids == [...]   # every custom_id of every batch created, in order

Routes (besides the chat server's /v1/models and /v1/chat/completions): POST /v1/files (multipart, purpose batch),
GET /v1/files/{id} and /v1/files/{id}/content, POST /v1/batches, GET /v1/batches (newest first, `limit` and `after`
as OpenAI pages them), GET /v1/batches/{id}, POST /v1/batches/{id}/cancel.

`on_create` (if set) is called with the batch id right after a batch is created and before the answer is sent: a
test kills its client there (kill -9 between the provider's create and the client's record of it).

Batch k (in order of creation) follows `scripts[k]` (the last script repeats): each retrieve moves it one status
along `steps` (validating, in_progress, finalizing, then its end). When it ends, its lines are answered by the
same responder as online requests: the first `answer_share` of them (all of them for `completed`), in input order,
go to the output file (a `Fault` reply becomes an error-file line with that HTTP status); the rest of an `expired`
or `cancelled` batch go to the error file as `batch_expired` / `batch_cancelled` lines, as OpenAI writes them. A
`failed` batch has no files, and its `errors` say why. Cancelling moves a batch to `cancelling`, and its next
retrieve to `cancelled`.

Failure modes a responder (or the server) can script, besides a `Fault` line (per-line 500, 400, ...):
- `content_is(value)`: a 200 answer whose message content is exactly `value` (None, a number);
- `Garbled()`: the line is written cut short (not JSON; its custom_id still readable), as a truncated file has it;
- `api_fault`: every Files and Batches route answers that `Fault` (`Fault(401, echo_key=True)`: a gateway quoting
  the caller's key back);
- `failed_errors`: what a `failed` batch's `errors` say (`errors.data[0]`).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from support.fake_openai import (
    DEFAULT_MODEL,
    Chaos,
    FakeOpenAI,
    Fault,
    RecordedRequest,
    Reply,
    Responder,
    _completion,
    _serve,
    chaotic,
    instant,
    key_echo,
)
from support.http_server import http_response

LIVE = ("validating", "in_progress", "finalizing")


@dataclass(frozen=True)
class BatchScript:
    """How one batch goes: the live statuses it shows on successive retrieves, how it ends, how much it answers."""

    steps: tuple[str, ...] = LIVE
    end: str = "completed"  # completed, expired, failed or cancelled
    answer_share: float = 1.0  # of its lines, answered when it ends (completed batches answer them all)


@dataclass(frozen=True)
class Garbled:
    """A responder's reply: the output line is written cut short (not JSON)."""


def content_is(value: Any) -> Reply:
    """A 200 answer whose first choice's message content is exactly `value` (None, a number, a list)."""
    choice = {"index": 0, "message": {"role": "assistant", "content": value}, "finish_reason": "stop", "logprobs": None}
    return Reply("", extra={"choices": [choice]})


class FakeBatchAPI(FakeOpenAI):
    """The chat server plus the Files and Batches endpoints, scripted per batch."""

    def __init__(self, responder: Responder = instant, scripts: list[BatchScript] | None = None, **kwargs: Any) -> None:
        super().__init__(responder, **kwargs)
        self.scripts = scripts or [BatchScript()]
        self.files: dict[str, dict[str, Any]] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.submitted_ids: list[str] = []  # the custom_id of every line of every batch created
        self.creates = 0  # POST /v1/batches that created a batch
        self.on_create: Any = None
        self.api_fault: Fault | None = None  # every Files and Batches route answers it
        self.failed_errors = {"code": "scripted_failure", "message": "scripted"}
        self.script_for: Callable[[int], BatchScript] | None = None  # batch k's script, instead of `scripts`
        self._steps: dict[str, list[str]] = {}

    async def handle(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> tuple[bytes, bool]:
        """The Batch API's routes; the rest is the chat server's."""
        route = path.split("?", 1)[0].rstrip("/").removeprefix("/v1")
        parts = route.strip("/").split("/")
        if parts[0] not in ("files", "batches"):
            return await super().handle(method, path, headers, raw)
        body = None if parts[0] == "files" else (json.loads(raw) if raw else None)
        self.requests.append(RecordedRequest(method, path, headers, body, time.monotonic()))
        if self.api_fault is not None:
            fault = self.api_fault
            answer = key_echo(headers) if fault.echo_key else fault.body
            return http_response(fault.status, answer or {"error": {"message": "fake fault", "type": "fake"}}), False
        if parts == ["files"] and method == "POST":
            return self._upload(headers, raw), False
        if parts[0] == "files" and len(parts) >= 2 and parts[1] in self.files:
            file = self.files[parts[1]]
            if parts[2:] == ["content"]:
                return _raw_response(file["data"]), False
            return http_response(200, _file_object(parts[1], file)), False
        if parts == ["batches"] and method == "POST":
            return self._create(body or {}), False
        if parts == ["batches"] and method == "GET":
            return http_response(200, self._list(path)), False
        if parts[0] == "batches" and len(parts) >= 2 and parts[1] in self.batches:
            if parts[2:] == ["cancel"] and method == "POST":
                return http_response(200, self._cancel(parts[1])), False
            if method == "GET" and len(parts) == 2:
                return http_response(200, self._advance(parts[1])), False
        return http_response(404, {"error": {"message": f"no route {method} {path}", "type": "not_found"}}), False

    def _upload(self, headers: dict[str, str], raw: bytes) -> bytes:
        fields = _multipart(headers.get("content-type", ""), raw)
        if fields.get("purpose", (None, b""))[1] != b"batch" or "file" not in fields:
            return http_response(400, {"error": {"message": "send purpose=batch and a file", "type": "invalid"}})
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = {"data": fields["file"][1], "filename": fields["file"][0] or "input.jsonl"}
        return http_response(200, _file_object(file_id, self.files[file_id]))

    def _store(self, lines: list[dict[str, Any]], name: str) -> str | None:
        if not lines:
            return None
        file_id = f"file-{len(self.files) + 1}"
        data = b"".join(_written(line) + b"\n" for line in lines)
        self.files[file_id] = {"data": data, "filename": name}
        return file_id

    def _create(self, request: dict[str, Any]) -> bytes:
        file = self.files.get(str(request.get("input_file_id")))
        if (
            file is None
            or request.get("completion_window") != "24h"
            or request.get("endpoint") != "/v1/chat/completions"
        ):
            return http_response(400, {"error": {"message": "bad batch request", "type": "invalid_request_error"}})
        lines = [json.loads(line) for line in file["data"].splitlines() if line.strip()]
        batch_id = f"batch_{len(self.batches) + 1}"
        k = len(self.batches)
        script = self.script_for(k) if self.script_for else self.scripts[min(k, len(self.scripts) - 1)]
        self.submitted_ids += [line["custom_id"] for line in lines]
        now = int(time.time())
        self.batches[batch_id] = {
            "id": batch_id,
            "object": "batch",
            "endpoint": request["endpoint"],
            "errors": None,
            "input_file_id": request["input_file_id"],
            "completion_window": "24h",
            "status": script.steps[0] if script.steps else script.end,
            "output_file_id": None,
            "error_file_id": None,
            "created_at": now,
            "expires_at": now + 86400,
            "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
            "metadata": request.get("metadata"),
            "_lines": lines,
            "_script": script,
        }
        self._steps[batch_id] = list(script.steps[1:]) + [script.end]
        if not script.steps:
            self._end(batch_id, script.end)
        self.creates += 1
        if self.on_create is not None:
            self.on_create(batch_id)
        return http_response(200, _public(self.batches[batch_id]))

    def _list(self, path: str) -> dict[str, Any]:
        """One page of the batches, newest first, after the `after` id, at most `limit` (OpenAI's default 20)."""
        from urllib.parse import parse_qs, urlsplit

        query = parse_qs(urlsplit(path).query)
        limit = int(query.get("limit", ["20"])[0])
        newest = list(reversed(self.batches))
        after = query.get("after", [None])[0]
        start = newest.index(after) + 1 if after in newest else 0
        page = [_public(self.batches[b]) for b in newest[start : start + limit]]
        return {
            "object": "list",
            "data": page,
            "first_id": page[0]["id"] if page else None,
            "last_id": page[-1]["id"] if page else None,
            "has_more": start + limit < len(newest),
        }

    def _advance(self, batch_id: str) -> dict[str, Any]:
        batch = self.batches[batch_id]
        if batch["status"] == "cancelling":
            self._end(batch_id, "cancelled")
        elif batch["status"] in LIVE and self._steps[batch_id]:
            status = self._steps[batch_id].pop(0)
            if status in LIVE:
                batch["status"] = status
            else:
                self._end(batch_id, status)
        return _public(batch)

    def _cancel(self, batch_id: str) -> dict[str, Any]:
        batch = self.batches[batch_id]
        if batch["status"] in LIVE:
            batch["status"] = "cancelling"
        return _public(batch)

    def _end(self, batch_id: str, status: str) -> None:
        batch = self.batches[batch_id]
        batch["status"] = status
        batch[f"{status}_at"] = int(time.time())
        lines: list[dict[str, Any]] = batch["_lines"]
        if status == "failed":
            batch["errors"] = {"object": "list", "data": [dict(self.failed_errors)]}
            return
        share = 1.0 if status == "completed" else batch["_script"].answer_share
        answered = math.ceil(len(lines) * share)
        output, errors = [], []
        for index, line in enumerate(lines):
            if index < answered:
                out = self._answer(line)
                (output if out["response"]["status_code"] == 200 else errors).append(out)
            else:
                code = "batch_expired" if status == "expired" else "batch_cancelled"
                errors.append(
                    {
                        "id": f"batch_req_{batch_id}_{index}",
                        "custom_id": line["custom_id"],
                        "response": None,
                        "error": {"code": code, "message": f"This request could not be executed before the {status}"},
                    }
                )
        batch["output_file_id"] = self._store(output, f"{batch_id}_output.jsonl")
        batch["error_file_id"] = self._store(errors, f"{batch_id}_error.jsonl")
        batch["request_counts"] = {"total": len(lines), "completed": len(output), "failed": len(errors)}

    def _answer(self, line: dict[str, Any]) -> dict[str, Any]:
        request = line["body"]
        reply = self.responder(request)
        if isinstance(reply, Garbled):
            return {"custom_id": line["custom_id"], "response": {"status_code": 200}, "_garbled": True}
        if isinstance(reply, Fault):
            body = reply.body or {"error": {"message": f"fake fault {reply.status}", "type": "fake"}}
            response = {"status_code": reply.status, "request_id": "req_fake", "body": body}
        else:
            completion = _completion(request, reply if isinstance(reply, Reply) else Reply(reply))
            response = {"status_code": 200, "request_id": "req_fake", "body": completion}
        return {
            "id": f"batch_req_{line['custom_id']}",
            "custom_id": line["custom_id"],
            "response": response,
            "error": None,
        }


def _written(line: dict[str, Any]) -> bytes:
    """An output line as the file holds it: JSON, or (garbled) its JSON without its last 10 characters."""
    if line.get("_garbled"):
        text = json.dumps({key: value for key, value in line.items() if key != "_garbled"})
        return text[:-10].encode()
    return json.dumps(line).encode()


def _public(batch: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in batch.items() if not key.startswith("_")}


def _file_object(file_id: str, file: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": file_id,
        "object": "file",
        "bytes": len(file["data"]),
        "created_at": int(time.time()),
        "filename": file["filename"],
        "purpose": "batch",
        "status": "processed",
    }


def _raw_response(data: bytes) -> bytes:
    head = f"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: {len(data)}\r\n\r\n"
    return head.encode("latin-1") + data


def _multipart(content_type: str, raw: bytes) -> dict[str, tuple[str | None, bytes]]:
    """The fields of a multipart/form-data body: name -> (filename, bytes)."""
    boundary = content_type.partition("boundary=")[2].strip('"')
    fields: dict[str, tuple[str | None, bytes]] = {}
    for part in raw.split(b"--" + boundary.encode()):
        head, _, data = part.partition(b"\r\n\r\n")
        if b"name=" not in head:
            continue
        disposition = head.decode("latin-1")
        name = disposition.split('name="', 1)[1].split('"', 1)[0]
        filename = disposition.split('filename="', 1)[1].split('"', 1)[0] if 'filename="' in disposition else None
        fields[name] = (filename, data.removesuffix(b"\r\n"))
    return fields


@dataclass(frozen=True)
class BatchChaos:
    """Fault injection at the Batch API (chaos runs): shares of batches that fail or expire (half answered), of
    lines written cut short, and how many looks a batch stays live."""

    fail_batch: float = 0.0
    expire_batch: float = 0.0
    garbled: float = 0.0
    looks: float = 2  # live statuses a batch shows before it ends

    def flags(self) -> list[str]:
        """These settings as command-line options of `python -m support.fake_batch`."""
        pairs = ((f"--{item.name.replace('_', '-')}", str(getattr(self, item.name))) for item in fields(self))
        return [flag for pair in pairs for flag in pair]

    def script_for(self, seed: int, counts: Counter[str]) -> Callable[[int], BatchScript]:
        """Batch k's script, drawn (seeded)."""
        draw = random.Random(seed)
        steps = LIVE[: max(1, int(self.looks))]

        def script(k: int) -> BatchScript:
            roll = draw.random()
            if roll < self.fail_batch:
                counts["batches_failed"] += 1
                return BatchScript(steps=steps, end="failed")
            if roll < self.fail_batch + self.expire_batch:
                counts["batches_expired"] += 1
                return BatchScript(steps=steps, end="expired", answer_share=0.5)
            return BatchScript(steps=steps)

        return script


def garbling(share: float, seed: int, counts: Counter[str], base: Responder) -> Responder:
    """`base`, with a share of the lines written cut short (seeded)."""
    draw = random.Random(seed + 1)

    def respond(request: dict[str, Any]) -> Any:
        if draw.random() < share:
            counts["garbled"] += 1
            return Garbled()
        return base(request)

    return respond


def main(argv: list[str] | None = None) -> None:
    """Serve the scripted Batch API (the instant responder, with chat faults and batch faults) until interrupted;
    print the base URL first; with --stats-file, write what it did (JSON counts) there on exit."""
    parser = argparse.ArgumentParser(description="Scripted OpenAI Batch API (instant responder).")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--model", "--models", dest="models", nargs="+", default=[DEFAULT_MODEL])
    for item in fields(Chaos):
        if item.name != "random_answers":
            parser.add_argument(f"--{item.name.replace('_', '-')}", type=float, default=item.default)
    parser.add_argument("--random-answers", action="store_true")
    for item in fields(BatchChaos):
        parser.add_argument(f"--{item.name.replace('_', '-')}", type=float, default=item.default)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--stats-file", type=Path)
    args = parser.parse_args(argv)
    counts: Counter[str] = Counter()
    chaos = Chaos(**{item.name: getattr(args, item.name) for item in fields(Chaos)})
    batch = BatchChaos(**{item.name: getattr(args, item.name) for item in fields(BatchChaos)})
    responder = garbling(batch.garbled, args.seed, counts, chaotic(chaos, args.seed, counts))
    server = FakeBatchAPI(responder, models=args.models, port=args.port, record=False)
    server.script_for = batch.script_for(args.seed, counts)

    def on_exit() -> None:
        if args.stats_file is not None:
            counts["batches_created"] = server.creates
            counts["lines_submitted"] = len(server.submitted_ids)
            args.stats_file.write_text(json.dumps(dict(counts)))

    _serve(server, on_exit)


if __name__ == "__main__":
    main()
