"""A scripted OpenAI-compatible HTTP server on loopback: a fixture for tests and benchmarks, not a model.

    with FakeOpenAI(script(["2", Fault(500), "3"])) as server:
        client = LLMClient([server.base_url], "fake-model", ...)
        ...
        assert server.requests[0].body["messages"] == expected

Endpoints: GET /v1/models and POST /v1/chat/completions, over the bare HTTP/1.1 of `http_server.py`
(several thousand requests per second on two cores).

A responder is a callable `responder(request_json) -> reply`, run on the server's event loop. A reply is:
- a `str`: one choice with that text (repeated `n` times when the request asks for `n` choices);
- a `list[str]`: one choice per text;
- a `Reply`: texts plus a delay, finish reason, explicit logprobs, usage or extra top-level fields;
- a `Fault`: an HTTP error status (with Retry-After and body), a delay, or a dropped connection.

Standalone, for benchmarks: `python -m support.fake_openai --port 8999` serves the "instant"
responder until interrupted. `FakeOpenAI(..., logprobs=False)` (`--no-logprobs`) answers without log-probabilities
even when asked, as many hosted APIs do. Fault injection (`Chaos`, `chaotic`): `--fail-500 0.05 --fail-429 0.05
--garbage 0.2 --random-answers --seed 1 --stats-file counts.json` and the like (`--help`); the counts are written on
SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import random
import re
import signal
import subprocess
import sys
import threading
import time
import zlib
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from peras.llm.constraints import PROBE_MESSAGES
from peras.paths import PROJECT_ROOT
from support.http_server import LoopbackHTTPServer, http_response

DEFAULT_MODEL = "fake-model"
_LABEL_SHARES = (0.7, 0.1, 0.1, 0.1)  # synthetic top-logprobs: the answer, then the other labels


@dataclass(frozen=True, slots=True)
class Reply:
    """A successful answer with everything a test may want to control."""

    texts: str | list[str]
    delay_s: float = 0.0
    finish_reason: str = "stop"
    logprobs: list[list[dict[str, Any]]] | None = None  # per choice: logprobs.content
    usage: dict[str, Any] | None = None
    extra: dict[str, Any] | None = None  # merged into the response, e.g. llama.cpp's "timings"
    until: threading.Event | None = None  # the delay ends early once this is set (what the test waited for happened)


@dataclass(frozen=True, slots=True)
class Fault:
    """An HTTP error `status` (optional Retry-After, body) after `delay_s`; or, with `drop`, no answer."""

    status: int = 500
    retry_after: str | float | None = None
    body: dict[str, Any] | str | None = None
    delay_s: float = 0.0
    drop: bool = False
    echo_key: bool = False  # the body quotes the caller's key, as a LiteLLM proxy's 401 does


def key_echo(headers: dict[str, str]) -> dict[str, Any]:
    """A LiteLLM proxy's answer to a key it does not know: the key itself, quoted back in the body."""
    key = headers.get("authorization", "").removeprefix("Bearer ").strip()
    message = (
        "Authentication Error, Invalid proxy server token passed. "
        f"Received API Key = {key}, Key Hash (Token) =0f1e2d3c. "
        "Unable to find token in cache or `LiteLLM_VerificationTokenTable`"
    )
    return {"error": {"message": message, "type": "auth_error", "param": "None", "code": "401"}}


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request as the server saw it."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None
    received_at: float


Responder = Callable[[dict[str, Any]], "str | list[str] | Reply | Fault"]


def instant(request: dict[str, Any]) -> str | list[str]:
    """Stable varied answers: a label 0-3 for label prompts, a confidence 50-100 for confidence prompts; for the
    'self' prompt a JSON object with both, for the 'certainty' prompt `[[label]]` then `[[certainty 1-100]]`; for
    UMBRELA's own prompt (umbrela 0.0.7's, which asks for "a JSON dictionary of scores"; bench/umbrela_judge.py)
    the JSON its parser reads, `{"M": m, "T": t, "O": label}`.

    The answer is a CRC32 of the last message, so the same prompt always gets the same answer, across runs
    and processes; choice i of n hashes the prompt with i appended.
    """
    messages = request.get("messages") or [{}]
    content = str(messages[-1].get("content", "")).encode("utf-8")
    is_confidence = b"please give a confidence score" in content
    is_self = b'"confidence_score": number' in content
    is_certainty = b"like so: [[X]]" in content
    is_umbrela = b"Produce a JSON dictionary of scores" in content
    texts = []
    for i in range(int(request.get("n") or 1)):
        digest = zlib.crc32(content + (b"#%d" % i if i else b""))
        if is_self:
            texts.append(f'{{"relevance": {digest % 4}, "confidence_score": {50 + digest % 51}, "explanation": "x"}}')
        elif is_certainty:
            texts.append(f"Relevance: [[{digest % 4}]]\nCertainty: [[{1 + digest % 100}]]")
        elif is_umbrela:
            texts.append(f'{{"M": {digest // 4 % 4}, "T": {digest // 16 % 4}, "O": {digest % 4}}}')
        else:
            texts.append(str(50 + digest % 51) if is_confidence else str(digest % 4))
    return texts if len(texts) > 1 else texts[0]


def script(replies: Iterable[str | list[str] | Reply | Fault]) -> Responder:
    """A responder that answers with `replies` in order, then a 500 saying the script ran out."""
    queue = deque(replies)

    def respond(request: dict[str, Any]) -> str | list[str] | Reply | Fault:
        if not queue:
            return Fault(500, body={"error": {"message": "fake server script exhausted", "type": "fake"}})
        return queue.popleft()

    return respond


# The constraint fields of each dialect a server may speak (peras/llm/constraints.py writes them).
DIALECT_FIELDS = {
    "vllm": ("structured_outputs",),
    "vllm-guided": ("guided_choice", "guided_regex", "guided_json", "guided_grammar"),
    "llama.cpp": ("grammar", "json_schema"),
    "openai": ("response_format",),
}
_GRAMMAR_CHOICE = re.compile(r'root ::= ("(?:[^"\\]|\\.)*"(?: \| "(?:[^"\\]|\\.)*")*)')


def speaking(dialect: str | None, base: Responder = instant, unknown: str = "ignore") -> Responder:
    """A server that enforces `dialect`'s constraint fields (None: no dialect) over `base`'s answers and, to another
    dialect's fields, answers HTTP 400 (`unknown="reject"`, as a strict API does) or ignores them ("ignore", as vLLM
    and llama-server do with fields they do not know).

    Enforcing: a choice (vLLM `choice`, a llama.cpp grammar that is one alternation of strings) answers base's text
    if it is a choice, else one chosen by a hash of the prompt; a JSON schema answers base's text if it is a JSON
    object with the schema's required keys, else an object built from the schema (the first enum value, the
    middle of an integer range, "x"); a regex or another grammar answers base's text (a test scripts it). The
    answer-format probe's question is answered "Hello!" before any constraint, whatever `base` would say."""
    spoken = DIALECT_FIELDS.get(dialect or "", ())
    foreign = {name for fields in DIALECT_FIELDS.values() for name in fields} - set(spoken)

    def respond(request: dict[str, Any]) -> str | list[str] | Reply | Fault:
        stray = sorted(foreign & set(request))
        if stray and unknown == "reject":
            message = f"Unrecognized request argument supplied: {stray[0]}"
            return Fault(400, body={"error": {"message": message, "type": "invalid_request_error"}})
        # The answer-format probe asks "Say hello." (peras/llm/constraints.py): a model's free answer, whatever `base`.
        reply = "Hello!" if request.get("messages") == PROBE_MESSAGES else base(request)
        constraint = _constraint(dialect, request)
        if constraint is None or not isinstance(reply, str):
            return reply
        return _enforced(constraint, reply, request)

    return respond


def _constraint(dialect: str | None, request: dict[str, Any]) -> tuple[str, Any] | None:
    """('choice', list), ('json', schema) or ('text', None) from the request's fields of `dialect`."""
    if dialect == "vllm" and isinstance(request.get("structured_outputs"), dict):
        (kind, value), *_ = request["structured_outputs"].items()
    elif dialect == "vllm-guided":
        found = [(name.removeprefix("guided_"), request[name]) for name in DIALECT_FIELDS[dialect] if name in request]
        if not found:
            return None
        kind, value = found[0]
    elif dialect == "llama.cpp" and "json_schema" in request:
        kind, value = "json", request["json_schema"]
    elif dialect == "llama.cpp" and "grammar" in request:
        matched = _GRAMMAR_CHOICE.fullmatch(request["grammar"].strip())
        kind, value = ("choice", json.loads(f"[{matched.group(1).replace(' | ', ',')}]")) if matched else ("text", None)
    elif dialect == "openai" and isinstance(request.get("response_format"), dict):
        kind, value = "json", request["response_format"]["json_schema"]["schema"]
    else:
        return None
    return (kind, value) if kind in ("choice", "json") else ("text", None)


def _enforced(constraint: tuple[str, Any], text: str, request: dict[str, Any]) -> str:
    kind, value = constraint
    if kind == "choice":
        if text in value:
            return text
        content = str((request.get("messages") or [{}])[-1].get("content", "")).encode("utf-8")
        return str(value[zlib.crc32(content) % len(value)])
    if kind == "json":
        with contextlib.suppress(ValueError):
            answer = json.loads(text)
            if isinstance(answer, dict) and sorted(answer) == sorted(value.get("required", [])):
                return text
        return json.dumps({key: _example(value["properties"][key]) for key in value.get("required", [])})
    return text


def _example(schema: dict[str, Any]) -> Any:
    if "enum" in schema:
        return schema["enum"][0]
    if schema.get("type") == "integer":
        return (int(schema.get("minimum", 0)) + int(schema.get("maximum", 100))) // 2
    return "x"


class FakeOpenAI:
    """The server in a background thread with its own event loop; a context manager."""

    def __init__(
        self,
        responder: Responder = instant,
        *,
        models: Iterable[str] = (DEFAULT_MODEL,),
        port: int = 0,
        record: bool = True,
        logprobs: bool = True,
    ) -> None:
        self.responder = responder
        self.logprobs = logprobs  # False: answers carry no log-probabilities, asked or not (as many hosted APIs)
        self.models = list(models)
        self.record = record
        self.requests: list[RecordedRequest] = []
        self.in_flight = 0
        self.peak_in_flight = 0
        self._http = LoopbackHTTPServer(self.handle, port)

    @property
    def base_url(self) -> str:
        """The URL to give an OpenAI client, ending in /v1."""
        return f"http://127.0.0.1:{self._http.port}/v1"

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        """The recorded POST /v1/chat/completions requests."""
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def reset(self) -> None:
        """Forget recorded requests and the concurrency peak."""
        self.requests.clear()
        self.peak_in_flight = self.in_flight

    def __enter__(self) -> FakeOpenAI:
        self._http.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._http.__exit__(*exc)

    async def serve_forever(self, ready: Callable[[str], None] = print) -> None:
        """Serve in the running loop until cancelled; `ready` gets the base URL once listening."""
        listener = await self._http.start()
        ready(self.base_url)
        async with listener:
            await listener.serve_forever()

    # Request handling, on the server's loop.

    async def handle(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> tuple[bytes, bool]:
        """The full HTTP response for one request, and whether to drop the connection instead."""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            return http_response(
                400, {"error": {"message": "body is not JSON", "type": "invalid_request_error"}}
            ), False
        if self.record:
            self.requests.append(RecordedRequest(method, path, headers, body, time.monotonic()))
        route = path.split("?", 1)[0].rstrip("/")
        if method == "GET" and route in ("/v1/models", "/models"):
            data = [{"id": m, "object": "model", "created": 0, "owned_by": "peras-fake"} for m in self.models]
            return http_response(200, {"object": "list", "data": data}), False
        if method != "POST" or route not in ("/v1/chat/completions", "/chat/completions"):
            return http_response(404, {"error": {"message": f"no route {method} {path}", "type": "not_found"}}), False
        if not isinstance(body, dict) or body.get("model") not in self.models:
            model = body.get("model") if isinstance(body, dict) else None
            message = f"The model `{model}` does not exist."
            return http_response(404, {"error": {"message": message, "type": "NotFoundError", "code": 404}}), False
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            return await self._chat(body, headers)
        finally:
            self.in_flight -= 1

    async def _chat(self, request: dict[str, Any], headers: dict[str, str]) -> tuple[bytes, bool]:
        try:
            reply = self.responder(request)
        except Exception as exc:  # a broken responder is a test bug: show it to the client
            return http_response(500, {"error": {"message": f"responder failed: {exc!r}", "type": "fake"}}), False
        if isinstance(reply, Fault):
            if reply.delay_s:
                await asyncio.sleep(reply.delay_s)
            if reply.drop:
                return b"", True
            answer_headers = {} if reply.retry_after is None else {"Retry-After": str(reply.retry_after)}
            body = reply.body or {"error": {"message": f"fake fault {reply.status}", "type": "fake"}}
            body = key_echo(headers) if reply.echo_key else body
            return http_response(reply.status, body, answer_headers), False
        if not isinstance(reply, Reply):
            reply = Reply(reply)
        if reply.delay_s and reply.until is not None:
            deadline = time.monotonic() + reply.delay_s
            while not reply.until.is_set() and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
        elif reply.delay_s:
            await asyncio.sleep(reply.delay_s)
        return http_response(200, _completion(request, reply, self.logprobs)), False


def _completion(request: dict[str, Any], reply: Reply, logprobs: bool = True) -> dict[str, Any]:
    """The chat.completion object for a reply, with logprobs when the request asked for them (and `logprobs`)."""
    n = int(request.get("n") or 1)
    texts = [reply.texts] * n if isinstance(reply.texts, str) else list(reply.texts)
    top_n = int(request.get("top_logprobs") or 0)
    choices = []
    for i, text in enumerate(texts):
        choice: dict[str, Any] = {
            "index": i,
            "message": {"role": "assistant", "content": text},
            "finish_reason": reply.finish_reason,
            "logprobs": None,
        }
        if request.get("logprobs") and logprobs:
            content = reply.logprobs[i] if reply.logprobs is not None else _synthetic_logprobs(text, top_n)
            choice["logprobs"] = {"content": content}
        choices.append(choice)
    prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in request.get("messages", []))
    completion_tokens = sum(max(1, len(t.split())) for t in texts)
    usage = reply.usage or {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    response = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model"),
        "choices": choices,
        "usage": usage,
    }
    return {**response, **(reply.extra or {})}


def _synthetic_logprobs(text: str, top_n: int) -> list[dict[str, Any]]:
    """One token for the whole text; for a label digit the other labels follow it in the top list."""
    chosen = {"token": text, "logprob": math.log(_LABEL_SHARES[0]), "bytes": None}
    top = [dict(chosen)]
    if text in ("0", "1", "2", "3"):
        others = [str(k) for k in range(4) if str(k) != text]
        top += [
            {"token": t, "logprob": math.log(p), "bytes": None} for t, p in zip(others, _LABEL_SHARES[1:], strict=True)
        ]
    return [{**chosen, "top_logprobs": top[:top_n]}]


@contextlib.contextmanager
def fake_openai_process(
    port: int = 0, model: str = DEFAULT_MODEL, *flags: str, module: str = "support.fake_openai"
) -> Iterator[str]:
    """The "instant" server in a child process (its own GIL, for benchmarks); yields the base URL.

    `flags`: more command-line options, e.g. `Chaos(...).flags()`; `module`: another server of the same options
    (`support.fake_batch`, the scripted Batch API).
    """
    command = [sys.executable, "-m", module, "--port", str(port), "--model", model, *flags]
    # Run from the directory holding the package, so it imports whether installed or checked out.
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=PROJECT_ROOT) as process:
        try:
            line = process.stdout.readline() if process.stdout else ""
            if not line.startswith("http://"):
                raise RuntimeError(f"fake OpenAI server did not start: {line!r}")
            yield line.strip()
        finally:
            process.terminate()
            process.wait(10)


def _delayed(delay_s: float) -> Responder:
    """The instant responder, answering after `delay_s` (the server stays concurrent meanwhile)."""

    def respond(request: dict[str, Any]) -> Reply:
        return Reply(instant(request), delay_s=delay_s)

    return respond


def _uniform_latency(low_ms: float, high_ms: float, seed: int = 0) -> Responder:
    """The instant responder, answering after a latency drawn uniformly from [low_ms, high_ms] (seeded)."""
    draw = random.Random(seed)

    def respond(request: dict[str, Any]) -> Reply:
        return Reply(instant(request), delay_s=draw.uniform(low_ms, high_ms) / 1000.0)

    return respond


GARBAGE = ("I cannot help with that.", "no idea", "???", "")  # chaotic's unreadable answers: no label, no confidence


@dataclass(frozen=True, slots=True)
class Chaos:
    """Fault injection: the share of chat requests that fail or misbehave, each drawn per request."""

    fail_500: float = 0.0
    fail_429: float = 0.0  # with Retry-After: retry_after_s
    retry_after_s: float = 0.2
    fail_400: float = 0.0  # the request is refused (what a context-length error looks like)
    drop: float = 0.0  # the connection is closed without an answer
    garbage: float = 0.0  # an unreadable answer (GARBAGE)
    slow: float = 0.0  # the answer comes after slow_s
    slow_s: float = 1.0
    random_answers: bool = False  # a random label or confidence on every call, instead of the stable one

    def flags(self) -> list[str]:
        """These settings as command-line options of the standalone server."""
        out = ["--random-answers"] if self.random_answers else []
        for item in fields(self):
            if item.name != "random_answers":
                out += [f"--{item.name.replace('_', '-')}", str(getattr(self, item.name))]
        return out


def chaotic(chaos: Chaos, seed: int = 0, counts: Counter[str] | None = None, base: Responder = instant) -> Responder:
    """`base` with faults injected (seeded), counting in `counts` what each request got."""
    draw = random.Random(seed)
    counts = Counter() if counts is None else counts

    def respond(request: dict[str, Any]) -> str | list[str] | Reply | Fault:
        counts["requests"] += 1
        roll = draw.random()
        for status, share in ((500, chaos.fail_500), (429, chaos.fail_429), (400, chaos.fail_400)):
            if roll < share:
                counts[f"http_{status}"] += 1
                retry_after = chaos.retry_after_s if status == 429 else None
                return Fault(status, retry_after=retry_after, body={"error": {"message": f"chaos {status}"}})
            roll -= share
        if roll < chaos.drop:
            counts["dropped"] += 1
            return Fault(drop=True)
        delay = 0.0
        if draw.random() < chaos.slow:
            counts["slow"] += 1
            delay = chaos.slow_s
        if draw.random() < chaos.garbage:
            counts["garbage"] += 1
            return Reply(draw.choice(GARBAGE), delay_s=delay)
        counts["answered"] += 1
        reply = _random_answer(request, draw) if chaos.random_answers else base(request)
        if isinstance(reply, Fault):
            return reply
        reply = reply if isinstance(reply, Reply) else Reply(reply)
        return Reply(reply.texts, reply.delay_s + delay, reply.finish_reason, reply.logprobs, reply.usage, reply.extra)

    return respond


def _random_answer(request: dict[str, Any], draw: random.Random) -> str:
    """A label 0-3, or a confidence 0-100 for a confidence prompt, drawn anew on every call."""
    content = str((request.get("messages") or [{}])[-1].get("content", ""))
    return str(draw.randint(0, 100)) if "please give a confidence score" in content else str(draw.randint(0, 3))


def _serve(server: FakeOpenAI, on_exit: Callable[[], None] | None) -> None:
    """Serve until interrupted; with `on_exit`, SIGTERM stops the server too and `on_exit` runs last."""

    async def serve() -> None:
        if on_exit is not None:
            task = asyncio.current_task()
            assert task is not None
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
        with contextlib.suppress(asyncio.CancelledError):
            await server.serve_forever(lambda url: print(url, flush=True))

    try:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(serve())
    finally:
        if on_exit is not None:
            on_exit()


def main(argv: list[str] | None = None) -> None:
    """Serve the "instant" responder until interrupted; print the base URL first."""
    parser = argparse.ArgumentParser(description="Scripted OpenAI-compatible server (instant responder).")
    parser.add_argument("--port", type=int, default=8999, help="0 picks a free port")
    parser.add_argument(
        "--model", "--models", dest="models", nargs="+", default=[DEFAULT_MODEL], help="model name(s) served"
    )
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before each answer (a slow model)")
    parser.add_argument(
        "--latency",
        type=float,
        nargs=2,
        metavar=("MIN_MS", "MAX_MS"),
        help="answer after a latency drawn uniformly between MIN_MS and MAX_MS (a GPU server)",
    )
    faults = parser.add_argument_group("fault injection (see Chaos; shares of requests, drawn per request)")
    for item in fields(Chaos):
        if item.name != "random_answers":
            faults.add_argument(f"--{item.name.replace('_', '-')}", type=float, default=item.default)
    faults.add_argument("--random-answers", action="store_true", help="a random label or confidence on every call")
    faults.add_argument("--no-logprobs", action="store_true", help="answer without log-probabilities, even if asked")
    faults.add_argument("--seed", type=int, default=0, help="of the fault draws")
    faults.add_argument("--stats-file", type=Path, help="write what each request got (JSON counts) here on exit")
    args = parser.parse_args(argv)
    responder = instant if not args.delay else _delayed(args.delay)
    if args.latency:
        responder = _uniform_latency(*args.latency)
    chaos = Chaos(**{item.name: getattr(args, item.name) for item in fields(Chaos)})
    counts: Counter[str] = Counter()
    if chaos != Chaos():
        responder = chaotic(chaos, args.seed, counts, base=responder)
    server = FakeOpenAI(responder, models=args.models, port=args.port, record=False, logprobs=not args.no_logprobs)
    stats_file = args.stats_file
    _serve(server, None if stats_file is None else lambda: stats_file.write_text(json.dumps(dict(counts))))


if __name__ == "__main__":
    main()
