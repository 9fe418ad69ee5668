"""The fast transport's HTTP/1.1 framing against a raw socket server that writes exactly the scripted bytes.

Every answer shape a server or proxy may send: a Content-Length body, a chunked one (with trailers, split anywhere), one
that ends when the server closes; a connection the server closes while idle, or mid-answer; an answer that never
comes (the timeout sweep); bytes that are not HTTP. On asyncio's loop and on uvloop (peras/llm/aio.py), as the engine
runs it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from peras.llm import aio
from peras.llm.transport import FastHTTPTransport, TransportError

pytestmark = pytest.mark.core

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter, int], Awaitable[bool]]


def ok(body: bytes, *extra: str) -> bytes:
    head = "".join(f"{line}\r\n" for line in extra)
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%b\r\n%b" % (len(body), head.encode(), body)


async def read_request(reader: asyncio.StreamReader) -> bytes:
    """One request's bytes (head and Content-Length body); b'' at EOF."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return b""
    length = next(
        (int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")), 0
    )
    return head + await reader.readexactly(length)


async def serve(handler: Handler, requests: Callable[[FastHTTPTransport], Awaitable[Any]], timeout_s: float = 5.0):
    """Run `requests(transport)` against a server whose connection n is handled by `handler(reader, writer, n)` (it
    returns whether to keep serving that connection); what `requests` returned, and the connections accepted."""
    accepted = [0]

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted[0] += 1
        number = accepted[0]
        try:
            while await handler(reader, writer, number):
                pass
        finally:
            writer.close()

    server = await asyncio.start_server(connection, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    transport = FastHTTPTransport(f"http://127.0.0.1:{port}/v1", None, timeout_s)
    try:
        return await requests(transport), accepted[0]
    finally:
        await transport.aclose()
        server.close()


@pytest.fixture(params=["asyncio", "uvloop"])
def loop_choice(request: pytest.FixtureRequest) -> str:
    return request.param


def test_keep_alive_reuses_one_connection(loop_choice: str) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> bool:
        request = await read_request(reader)
        if not request:
            return False
        writer.write(ok(b'{"n": %d}' % request.count(b"x"), "Content-Type: application/json", "X-Extra:  padded  "))
        return True

    async def requests(transport: FastHTTPTransport) -> list[Any]:
        return [await transport.chat({"x": "x" * k}) for k in (1, 2, 3)]

    answers, accepted = aio.run(serve(handler, requests), loop_choice)
    assert [body for _, _, body in answers] == [b'{"n": 2}', b'{"n": 3}', b'{"n": 4}']  # the key's "x" counts too
    assert answers[0][0] == 200 and answers[0][1]["x-extra"] == "padded"
    assert accepted == 1


def test_chunked_body_with_trailers_split_anywhere(loop_choice: str) -> None:
    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    wire = head + b"5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nX-T: 1\r\n\r\n"

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> bool:
        if not await read_request(reader):
            return False
        for at in range(0, len(wire), 3):  # three bytes at a time, each written on its own
            writer.write(wire[at : at + 3])
            await writer.drain()
            await asyncio.sleep(0)
        return True

    async def requests(transport: FastHTTPTransport) -> list[Any]:
        return [await transport.chat({}), await transport.chat({})]

    answers, accepted = aio.run(serve(handler, requests), loop_choice)
    assert [body for _, _, body in answers] == [b"hello, world"] * 2
    assert accepted == 1  # a chunked answer leaves the connection reusable


def test_body_until_close_and_a_closed_idle_connection(loop_choice: str) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> bool:
        if not await read_request(reader):
            return False
        if n == 1:
            writer.write(b"HTTP/1.0 200 OK\r\n\r\nuntil the end")  # no length: the body ends with the connection
        else:
            writer.write(ok(b"second", "Connection: keep-alive"))
            await writer.drain()  # then closes while the client holds the connection idle
        return False

    async def requests(transport: FastHTTPTransport) -> list[Any]:
        first = await transport.chat({})
        second = await transport.chat({})
        await asyncio.sleep(0.05)  # the server's close (EOF) reaches the idle connection
        third = await transport.chat({})  # a new connection, not a failed request on the closed one
        return [first, second, third]

    answers, accepted = aio.run(serve(handler, requests), loop_choice)
    assert [body for _, _, body in answers] == [b"until the end", b"second", b"second"]
    assert accepted == 3


def test_no_answer_times_out_within_the_sweep_step(loop_choice: str) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> bool:
        await read_request(reader)
        await asyncio.sleep(5)  # never answers in time
        return False

    async def requests(transport: FastHTTPTransport) -> tuple[str, float]:
        started = time.monotonic()
        with pytest.raises(TransportError) as caught:
            await transport.chat({})
        return caught.value.kind, time.monotonic() - started

    (kind, took), _ = aio.run(serve(handler, requests, timeout_s=0.3), loop_choice)
    assert kind == "timeout"
    assert 0.3 <= took < 0.3 + 0.03 + 0.25  # the timeout, at most a tenth of it late (and the machine's jitter)


@pytest.mark.parametrize(
    ("wire", "detail"),
    [
        (b"SSH-2.0-OpenSSH_9.6\r\n\r\n", "not an HTTP response"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly part", "the server closed the connection"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "invalid literal"),
    ],
)
def test_broken_answers_are_protocol_errors(loop_choice: str, wire: bytes, detail: str) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> bool:
        if await read_request(reader):
            writer.write(wire)
            await writer.drain()
        return False

    async def requests(transport: FastHTTPTransport) -> TransportError:
        with pytest.raises(TransportError) as caught:
            await transport.chat({})
        return caught.value

    error, _ = aio.run(serve(handler, requests), loop_choice)
    assert error.kind == "protocol" and detail in error.detail


def test_a_longer_answer_than_asked_for_ends_the_connection(loop_choice: str) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> bool:
        if not await read_request(reader):
            return False
        writer.write(ok(b"one") + ok(b"unasked"))  # two answers to one request: the second is never read as one
        return True

    async def requests(transport: FastHTTPTransport) -> list[bytes]:
        return [(await transport.chat({}))[2] for _ in range(2)]

    answers, accepted = aio.run(serve(handler, requests), loop_choice)
    assert answers == [b"one", b"one"]
    assert accepted == 2


def test_the_loop_choice() -> None:
    assert type(asyncio.new_event_loop()).__module__.startswith("asyncio")
    assert aio.run(_loop_module(), "uvloop").startswith("uvloop")
    assert aio.run(_loop_module(), "auto").startswith("uvloop")  # installed with PERAS
    assert aio.run(_loop_module(), "asyncio").startswith("asyncio")


async def _loop_module() -> str:
    return type(asyncio.get_running_loop()).__module__


class Stop(Exception):
    """What the test's SIGTERM handler raises (cli/main.py raises Stopped)."""


def test_sigterm_stops_the_run_and_its_handler_raises_after_the_unwinding(loop_choice: str) -> None:
    import os
    import signal
    import threading

    unwound: list[str] = []

    def handler(signum: int, frame: Any) -> None:
        raise Stop(signal.Signals(signum).name)

    async def asking() -> None:
        try:
            # sent while the loop waits (in uvloop's C code, where a raising Python handler went unseen)
            threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGTERM)).start()
            await asyncio.sleep(5)  # stopped long before
        finally:
            unwound.append("journal closed")
            await asyncio.sleep(0)  # the unwinding may still await (the last loads)
            unwound.append("loaded")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        started = time.monotonic()
        with pytest.raises(Stop, match="SIGTERM"):
            aio.run(asking(), loop_choice)
        assert time.monotonic() - started < 2
        assert unwound == ["journal closed", "loaded"]
        assert signal.getsignal(signal.SIGTERM) is handler  # back in place for the rest of the command
    finally:
        signal.signal(signal.SIGTERM, previous)


class _Wire:
    """A stand-in for the socket transport under one _Connection: what it was asked to write, and whether closed."""

    def __init__(self) -> None:
        self.closed = False

    def write(self, data: bytes) -> None:
        pass

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True


def _read(pieces: list[bytes]) -> tuple[str, Any]:
    """How a connection ends a request whose answer arrives in these pieces: its result (and whether the connection
    is reused after every piece arrived), its error, or nothing yet."""
    from peras.llm.http1 import _Connection

    async def main() -> tuple[str, Any]:
        connection = _Connection()
        connection.connection_made(_Wire())  # type: ignore[arg-type]
        waiter = connection.send(b"", 0.0, 1.0)
        for piece in pieces:
            connection.data_received(piece)
        if not waiter.done():
            return "pending", len(connection.buffer)
        if waiter.exception() is not None:
            return "error", repr(waiter.exception())
        status, headers, body, keep = waiter.result()
        return "answer", (status, headers, body, keep and connection.reusable())  # reused as the transport decides

    return asyncio.run(main())


_ANSWERS = [
    ok(b'{"choices": []}'),
    ok(b"x" * 300, "Connection: close", "Retry-After: 7"),
    ok(b"two") + ok(b"answers"),  # more than asked for: read, but the connection is not kept
    ok(b"short")[:-2],  # the body not all there yet
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
    b"HTTP/1.0 200 OK\r\n\r\nuntil the server closes",
    b"SSH-2.0-OpenSSH\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: -4\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: 5",  # the head not all there yet
]


@settings(max_examples=200, deadline=None)
@given(answer=st.sampled_from(_ANSWERS), cuts=st.lists(st.integers(0, 400), max_size=4))
def test_an_answer_in_one_piece_reads_as_in_any_pieces(answer: bytes, cuts: list[int]) -> None:
    # The one-piece path (no buffer) and the general one agree on every framing, head and failure.
    edges = sorted({min(cut, len(answer)) for cut in cuts} | {0, len(answer)})
    pieces = [answer[a:b] for a, b in zip(edges, edges[1:], strict=False) if b > a]
    assert _read([answer]) == _read(pieces)
    assert _read([answer]) == _read([answer[i : i + 1] for i in range(len(answer))])


def test_response_heads_are_remembered_bounded_and_failures_are_not() -> None:
    from peras.llm import http1 as transport

    transport._HEADS.clear()
    head = b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 3\r\nContent-Length: 0"
    first = transport._read_head(head)
    assert transport._read_head(head) is first
    assert first == ((429, {"retry-after": "3", "content-length": "0"}, True), 0)
    with pytest.raises(ValueError, match="not an HTTP response"):
        transport._read_head(b"SSH-2.0-OpenSSH")
    assert list(transport._HEADS) == [head]
    for length in range(transport._HEADS_KEPT + 5):
        transport._read_head(b"HTTP/1.1 200 OK\r\nContent-Length: %d" % length)
    assert 0 < len(transport._HEADS) <= transport._HEADS_KEPT
