"""HTTP/1.1 on one keep-alive connection, for the fast transport (`transport.py` FastHTTPTransport): the asyncio
protocol that writes a request and parses its response as the bytes arrive (Content-Length, chunked, or until the
server closes), and the reading of response heads, remembered by their bytes."""

from __future__ import annotations

import asyncio
from typing import Any

MAX_HEAD = 1 << 20  # a response head longer than this is refused (as the stream reader's limit did)
_CHUNKED, _UNTIL_CLOSE = -1, -2


class _Connection(asyncio.Protocol):
    """One keep-alive connection: one request at a time, its response parsed as the bytes arrive."""

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()  # made by the loop's create_connection, on the loop
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.waiter: asyncio.Future[tuple[int, dict[str, str], bytes, bool]] | None = None
        self.deadline = 0.0
        self.timeout_s = 0.0
        self.ended = False  # EOF received, or the connection is lost or closed: no further request on it
        self._head: tuple[int, dict[str, str], bool] | None = None  # status, headers, keep-alive
        self._length = 0  # the body's length, or _CHUNKED, or _UNTIL_CLOSE

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def send(self, payload: bytes, deadline: float, timeout_s: float) -> asyncio.Future[Any]:
        """Write one request; the future its response resolves."""
        assert self.transport is not None
        self.waiter = self.loop.create_future()
        self.deadline, self.timeout_s = deadline, timeout_s
        self.buffer.clear()
        self._head = None
        self.transport.write(payload)
        return self.waiter

    def reusable(self) -> bool:
        return not self.ended and self.transport is not None and not self.transport.is_closing()

    def close(self) -> None:
        self.ended = True
        if self.transport is not None:
            self.transport.close()

    def fail(self, exc: BaseException) -> None:
        """End the request in flight with `exc` (the connection is closed by whoever awaited it)."""
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)

    def data_received(self, data: bytes) -> None:
        if self.waiter is None:  # bytes nobody asked for (or after the request failed): never reuse this connection
            self.close()
            return
        if self._head is None and not self.buffer and self._whole(data):
            return
        self.buffer += data
        try:
            response = self._parse()
        except ValueError as exc:
            self.fail(exc)
            return
        if response is not None:
            waiter, self.waiter = self.waiter, None
            if not waiter.done():
                waiter.set_result(response)

    def _whole(self, data: bytes) -> bool:
        """A response read whole, exactly, in one piece (the usual for a short answer): resolved from `data` itself,
        without the buffer's copies. False, with nothing changed, for anything else (the general path reads it)."""
        end = data.find(b"\r\n\r\n")
        if end < 0:
            return False
        try:
            (status, headers, keep), length = _read_head(data[:end])
        except ValueError:
            return False  # the general path fails it, as it fails any head that is not HTTP
        if length < 0 or len(data) - end - 4 != length:
            return False
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result((status, headers, data[end + 4 :], keep))
        return True

    def eof_received(self) -> bool:
        self.ended = True
        self._at_end()
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self.ended = True
        self._at_end()
        self.fail(EOFError(f"the server closed the connection{f': {exc}' if exc else ''}"))

    def _at_end(self) -> None:
        """The server closed its side: a body that ends when it does is complete."""
        if self.waiter is not None and self._head is not None and self._length == _UNTIL_CLOSE:
            status, headers, _ = self._head
            waiter, self.waiter = self.waiter, None
            if not waiter.done():
                waiter.set_result((status, headers, bytes(self.buffer), False))

    def _parse(self) -> tuple[int, dict[str, str], bytes, bool] | None:
        """The whole response once it has arrived, else None; ValueError if it is not HTTP."""
        buffer = self.buffer
        if self._head is None:
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(buffer) > MAX_HEAD:
                    raise ValueError(f"a response head longer than {MAX_HEAD} bytes")
                return None
            self._head, self._length = _read_head(bytes(buffer[:end]))
            del buffer[: end + 4]
        status, headers, keep = self._head
        if self._length >= 0:
            if len(buffer) < self._length:
                return None
            body = bytes(buffer[: self._length])
            extra = len(buffer) > self._length  # more than one answer: nothing more is read from this connection
            return status, headers, body, keep and not extra
        if self._length == _CHUNKED:
            found = _dechunk(buffer)
            return None if found is None else (status, headers, found, keep)
        return None  # until the server closes: _at_end


# Response heads read, by their bytes: a server answering short requests repeats its heads (the same status,
# headers, Date within a second and the few body lengths of short answers), and reading one costs ~1.5 us of
# the ~3 us a response takes to read. Bounded: emptied when full. The headers dicts are shared: read only.
_HEADS: dict[bytes, tuple[tuple[int, dict[str, str], bool], int]] = {}
_HEADS_KEPT = 1024


def _read_head(head: bytes) -> tuple[tuple[int, dict[str, str], bool], int]:
    """`_parse_head` of the head's bytes, remembered."""
    found = _HEADS.get(head)
    if found is None:
        found = _parse_head(head.decode("latin-1"))  # not HTTP: ValueError, nothing remembered
        if len(_HEADS) >= _HEADS_KEPT:
            _HEADS.clear()
        _HEADS[head] = found
    return found


def _parse_head(head: str) -> tuple[tuple[int, dict[str, str], bool], int]:
    """(status, lower-cased headers, keep-alive) and the body's length (or _CHUNKED, _UNTIL_CLOSE)."""
    lines = head.split("\r\n")
    version, _, rest = lines[0].partition(" ")
    status = rest[:3]
    if not version.startswith("HTTP/") or not status.isdigit():
        raise ValueError(f"not an HTTP response: {lines[0][:80]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    connection = headers.get("connection", "").lower()
    keep = connection != "close" if version == "HTTP/1.1" else connection == "keep-alive"
    if "content-length" in headers:
        length = int(headers["content-length"])
        if length < 0:
            raise ValueError(f"a negative Content-Length: {length}")
    elif "chunked" in headers.get("transfer-encoding", "").lower():
        length = _CHUNKED
    else:
        length, keep = _UNTIL_CLOSE, False  # the body ends when the server closes
    return (int(status), headers, keep), length


def _dechunk(buffer: bytearray) -> bytes | None:
    """A chunked body, once its last chunk and trailers have arrived (else None)."""
    parts: list[bytes] = []
    at = 0
    while True:
        end = buffer.find(b"\r\n", at)
        if end < 0:
            return None
        size = int(bytes(buffer[at:end]).split(b";", 1)[0].strip(), 16)
        at = end + 2
        if size == 0:
            while True:  # trailers, then an empty line
                end = buffer.find(b"\r\n", at)
                if end < 0:
                    return None
                if end == at:
                    return b"".join(parts)
                at = end + 2
        if len(buffer) < at + size + 2:
            return None
        parts.append(bytes(buffer[at : at + size]))
        at += size + 2
