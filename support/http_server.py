"""Just enough HTTP/1.1 server for loopback fixtures: keep-alive, Content-Length bodies, one handler.

A framework would spend more CPU per request than the client under test: benchmarks need several
thousand requests per second on two cores, so requests are parsed by hand on a bare asyncio protocol.
The handler gets (method, path, lower-cased headers, body bytes) and returns the full response bytes and
whether to drop the connection instead of answering.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Awaitable, Callable
from typing import Any

Handler = Callable[[str, str, dict[str, str], bytes], Awaitable[tuple[bytes, bool]]]
_REASONS = {
    200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
    408: "Request Timeout", 409: "Conflict", 411: "Length Required", 429: "Too Many Requests",
    500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout",
}  # fmt: skip


def http_response(status: int, body: dict[str, Any] | str, headers: dict[str, str] | None = None) -> bytes:
    """A complete response: JSON for a dict, text/plain for a str."""
    data = body.encode("utf-8") if isinstance(body, str) else json.dumps(body).encode("utf-8")
    kind = "text/plain" if isinstance(body, str) else "application/json"
    extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
    head = (
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}\r\nContent-Type: {kind}\r\n"
        f"Content-Length: {len(data)}\r\n{extra}\r\n"
    )
    return head.encode("latin-1") + data


class LoopbackHTTPServer:
    """Serve `handler` on 127.0.0.1: in the running loop (`start`) or a background thread (`with`)."""

    def __init__(self, handler: Handler, port: int = 0) -> None:
        self.handler = handler
        self.port = port
        self.connections: set[_Connection] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()

    async def start(self) -> asyncio.Server:
        """Listen in the running loop; `port` is the real one afterwards (0 picks a free port)."""
        self._server = await asyncio.get_running_loop().create_server(
            lambda: _Connection(self), "127.0.0.1", self.port, reuse_address=True, backlog=1024
        )
        self.port = self._server.sockets[0].getsockname()[1]
        return self._server

    def __enter__(self) -> LoopbackHTTPServer:
        self._thread = threading.Thread(target=self._run, name="loopback-http", daemon=True)
        self._thread.start()
        if not self._ready.wait(10) or self._server is None:
            raise RuntimeError("loopback HTTP server did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._loop.is_running():
            self._loop.call_soon_threadsafe(self._shutdown)
        if self._thread is not None:
            self._thread.join(10)

    def _run(self) -> None:
        self._loop = asyncio.new_event_loop()
        try:
            self._loop.run_until_complete(self.start())
        finally:
            self._ready.set()
        self._loop.run_forever()
        self._loop.run_until_complete(asyncio.sleep(0))  # let aborted transports finish closing
        self._loop.close()

    def _shutdown(self) -> None:
        # Close the listener and every open connection, so clients see a refused or reset connection.
        if self._server is not None:
            self._server.close()
        for connection in list(self.connections):
            if connection.transport is not None:
                connection.transport.abort()
        assert self._loop is not None
        self._loop.call_soon(self._loop.stop)


class _Connection(asyncio.Protocol):
    """One keep-alive connection: parse requests one at a time, answer each in order."""

    def __init__(self, server: LoopbackHTTPServer) -> None:
        self.server = server
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        self.busy = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.server.connections.add(self)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if not self.busy:
            self._next()

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        self.server.connections.discard(self)

    def _next(self) -> None:
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0 or self.transport is None or self.transport.is_closing():
            return
        lines = bytes(self.buffer[:end]).decode("latin-1").split("\r\n")
        method, path, _ = (lines[0].split(" ") + ["", ""])[:3]
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if "chunked" in headers.get("transfer-encoding", ""):
            self.transport.write(http_response(411, {"error": {"message": "send Content-Length"}}))
            self.transport.close()
            return
        length = int(headers.get("content-length") or 0)
        if len(self.buffer) < end + 4 + length:
            return  # wait for the rest of the body
        raw = bytes(self.buffer[end + 4 : end + 4 + length])
        del self.buffer[: end + 4 + length]
        self.busy = True
        task = asyncio.ensure_future(self.server.handler(method, path, headers, raw))
        task.add_done_callback(lambda done: self._answer(done, headers))

    def _answer(self, done: asyncio.Future[tuple[bytes, bool]], headers: dict[str, str]) -> None:
        self.busy = False
        if self.transport is None or self.transport.is_closing():
            return
        if done.cancelled() or done.exception() is not None:
            payload, drop = (
                http_response(500, {"error": {"message": f"fixture server failed: {done!r}"}}),
                False,
            )
        else:
            payload, drop = done.result()
        if drop:
            self.transport.abort()
            return
        self.transport.write(payload)
        if headers.get("connection", "").lower() == "close":
            self.transport.close()
        elif self.buffer:
            self._next()
