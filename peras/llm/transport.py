"""How one HTTP request reaches one base URL; retries, balancing and budgets live in `client.py`.

Two interchangeable transports return the same thing, `(status, headers, body bytes)`, or raise
`TransportError`:

- `OpenAITransport`: the official `openai.AsyncOpenAI` (its own retries off). TLS, proxies and the
  hosted APIs' quirks are its job. It costs about 2.5 ms of CPU per request on a 2-core VM (httpx2 and
  the SDK's request building), which is nothing next to a hosted API's latency and rate limits.
- `FastHTTPTransport`: keep-alive HTTP/1.1 over asyncio streams, one write per request, about 40 us of
  CPU per request. Used for plain `http://` URLs (vLLM, llama.cpp, the test server on loopback or a LAN),
  where the SDK's overhead alone would cap a run at a few hundred requests per second.

`make_transport(..., backend="auto")` picks the fast one for http:// and the SDK for https://.

Proxies: both honour HTTP_PROXY / HTTPS_PROXY / ALL_PROXY and NO_PROXY (either case), as curl and httpx do.
The fast transport sends an http:// URL's requests to an http:// proxy in absolute form (with
Proxy-Authorization when the proxy URL has user:password); a proxy it cannot speak (https://, socks) sends
that URL to the SDK instead. Loopback hosts (localhost, 127.0.0.0/8, ::1) never go through a proxy, as in
Go's net/http: a proxy elsewhere cannot reach this machine's loopback, where the embedded model listens.
"""

from __future__ import annotations

import asyncio
import base64
import ipaddress
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import unquote, urlsplit
from urllib.request import getproxies_environment

import orjson

Backend = Literal["auto", "openai", "fast"]
Response = tuple[int, dict[str, str], bytes]


class TransportError(Exception):
    """The request got no HTTP answer: `kind` is 'connect', 'timeout' or 'protocol'."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail


@dataclass(frozen=True)
class Proxy:
    """An http:// forward proxy: where to connect, and the credentials it asks for (if any)."""

    url: str  # without credentials, for messages
    host: str
    port: int
    authorization: str | None  # the Proxy-Authorization header value


def environment_proxy(base_url: str) -> str | None:
    """The proxy URL the environment names for `base_url`, or None (no proxy, NO_PROXY, or a loopback host)."""
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    if _is_loopback(host):
        return None
    proxies = getproxies_environment()  # lower-case names win over upper-case ones, as in curl
    url = proxies.get(parts.scheme) or proxies.get("all")
    if not url:
        return None
    if bypassed(host, parts.port or (443 if parts.scheme == "https" else 80), proxies.get("no", "")):
        return None
    return url if "://" in url else f"http://{url}"


def bypassed(host: str, port: int, no_proxy: str) -> bool:
    """Whether NO_PROXY names `host`: `*`, the host itself, a domain it is in (`.corp` or `corp`), or host:port."""
    host = host.lower().strip("[]")
    for entry in (e.strip().lower() for e in no_proxy.split(",")):
        if entry == "*":
            return True
        name, _, entry_port = entry.rpartition(":") if entry.count(":") == 1 else (entry, "", "")
        if entry_port and entry_port != str(port):
            continue
        name = name.strip("[]").lstrip(".")
        if name and (host == name or host.endswith("." + name)):
            return True
    return False


def http_proxy(url: str) -> Proxy | None:
    """`url` as a proxy the fast transport can use (plain http://), else None."""
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        return None
    authorization = None
    if parts.username is not None:
        pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
        authorization = "Basic " + base64.b64encode(pair).decode("ascii")
    return Proxy(f"http://{parts.hostname}:{parts.port or 80}", parts.hostname, parts.port or 80, authorization)


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost" or host.lower().endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def make_transport(base_url: str, api_key: str | None, timeout_s: float, backend: Backend = "auto"):
    """The transport for one base URL (see the module docstring for the choice)."""
    if backend == "fast" or (backend == "auto" and urlsplit(base_url).scheme == "http"):
        proxy_url = environment_proxy(base_url)
        proxy = http_proxy(proxy_url) if proxy_url else None
        if proxy_url is None or proxy is not None:
            return FastHTTPTransport(base_url, api_key, timeout_s, proxy)
        if backend == "fast":
            raise ValueError(f"the fast transport speaks to http:// proxies only, not {proxy_url.split('@')[-1]!r}")
    return OpenAITransport(base_url, api_key, timeout_s)


class OpenAITransport:
    """Requests through `openai.AsyncOpenAI`, read back as raw bytes so both transports parse alike."""

    def __init__(self, base_url: str, api_key: str | None, timeout_s: float) -> None:
        import openai  # imported here: about a second of every command's start, and http:// servers never need it

        # Local servers need no key, but the SDK refuses to start without one.
        self._client = openai.AsyncOpenAI(
            base_url=base_url, api_key=api_key or "EMPTY", max_retries=0, timeout=timeout_s
        )

    async def chat(self, body: dict[str, Any]) -> Response:
        """POST /chat/completions with `body` (model, messages and parameters, extra_body already merged)."""
        model, messages = body["model"], body["messages"]
        params = {k: v for k, v in body.items() if k not in ("model", "messages")}
        return await self._call(
            self._client.chat.completions.with_raw_response.create(model=model, messages=messages, extra_body=params)
        )

    async def models(self, timeout_s: float) -> Response:
        """GET /models."""
        return await self._call(self._client.with_options(timeout=timeout_s).models.with_raw_response.list())

    async def aclose(self) -> None:
        """Close the SDK's connection pool."""
        await self._client.close()

    @staticmethod
    async def _call(pending: Any) -> Response:
        import openai

        try:
            raw = (await pending).http_response
        except openai.APIStatusError as exc:
            raw = exc.response
        except openai.APITimeoutError as exc:
            raise TransportError("timeout", "request timed out") from exc
        except openai.APIConnectionError as exc:
            cause = exc.__cause__ or exc
            raise TransportError("connect", f"{type(cause).__name__}: {cause}") from exc
        return raw.status_code, {k.lower(): v for k, v in raw.headers.items()}, raw.content


class FastHTTPTransport:
    """Keep-alive HTTP/1.1 client for plain http:// servers: a pool of idle connections, reused LIFO."""

    def __init__(self, base_url: str, api_key: str | None, timeout_s: float, proxy: Proxy | None = None) -> None:
        parts = urlsplit(base_url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"FastHTTPTransport needs an http:// URL, not {base_url!r}")
        self.host = parts.hostname
        self.port = parts.port or 80
        self.proxy = proxy
        # Through a proxy the request line names the whole URL (absolute form), else only the path.
        origin = f"http://{parts.netloc.rpartition('@')[2]}" if proxy else ""
        self.prefix = origin + parts.path.rstrip("/")
        self.timeout_s = timeout_s
        auth = f"Authorization: Bearer {api_key}\r\n" if api_key else ""
        if proxy is not None and proxy.authorization:
            auth += f"Proxy-Authorization: {proxy.authorization}\r\n"
        # Built once: the key never appears anywhere but in these bytes on the wire.
        self._headers = f"Host: {self.host}:{self.port}\r\nUser-Agent: peras\r\nAccept: application/json\r\n{auth}"
        self._idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    async def chat(self, body: dict[str, Any]) -> Response:
        """POST /chat/completions with `body`."""
        data = orjson.dumps(body)  # UTF-8 JSON, compact, as json.dumps(ensure_ascii=False) writes it
        head = (
            f"POST {self.prefix}/chat/completions HTTP/1.1\r\n{self._headers}"
            f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
        )
        return await self._request(head.encode("latin-1") + data, self.timeout_s)

    async def models(self, timeout_s: float) -> Response:
        """GET /models."""
        head = f"GET {self.prefix}/models HTTP/1.1\r\n{self._headers}\r\n"
        return await self._request(head.encode("latin-1"), timeout_s)

    async def aclose(self) -> None:
        """Close every idle connection."""
        while self._idle:
            self._idle.pop()[1].close()

    async def _request(self, payload: bytes, timeout_s: float) -> Response:
        conn = self._take_idle()
        try:
            async with asyncio.timeout(timeout_s):
                if conn is None:
                    conn = await self._connect()
                conn[1].write(payload)
                status, headers, content, keep = await _read_response(conn[0])
        except TimeoutError as exc:
            _close(conn)
            raise TransportError("timeout", f"no answer within {timeout_s:g} s") from exc
        except (TransportError, asyncio.CancelledError):
            _close(conn)  # a connection abandoned mid-request cannot be reused
            raise
        except (OSError, EOFError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as exc:
            _close(conn)
            raise TransportError("protocol", f"connection broken: {type(exc).__name__}: {exc}") from exc
        if keep:
            self._idle.append(conn)
        else:
            _close(conn)
        return status, headers, content

    def _take_idle(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        # A server that closed an idle connection has already fed EOF to its reader: skip those, so a
        # keep-alive timeout on the server never costs a retry.
        while self._idle:
            conn = self._idle.pop()
            if not conn[0].at_eof() and not conn[1].is_closing():
                return conn
            _close(conn)
        return None

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        host, port = (self.proxy.host, self.proxy.port) if self.proxy else (self.host, self.port)
        try:
            return await asyncio.open_connection(host, port, limit=1 << 20)
        except OSError as exc:
            via = f"proxy {self.proxy.url} (from HTTP_PROXY/ALL_PROXY; NO_PROXY bypasses it): " if self.proxy else ""
            raise TransportError("connect", f"{via}{type(exc).__name__}: {exc.strerror or exc}") from exc


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], bytes, bool]:
    """Status, lower-cased headers, body and whether the connection may be reused."""
    lines = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
    version, status, *_ = lines[0].split(" ", 2)
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    connection = headers.get("connection", "").lower()
    keep = connection != "close" if version == "HTTP/1.1" else connection == "keep-alive"
    if "content-length" in headers:
        body = await reader.readexactly(int(headers["content-length"]))
    elif "chunked" in headers.get("transfer-encoding", "").lower():
        body = await _read_chunked(reader)
    else:
        body, keep = await reader.read(), False  # the body ends when the server closes
    return int(status), headers, body, keep


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    parts: list[bytes] = []
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";", 1)[0].strip(), 16)
        if size == 0:
            while (await reader.readuntil(b"\r\n")) != b"\r\n":
                pass  # trailers
            return b"".join(parts)
        parts.append((await reader.readexactly(size + 2))[:-2])


def _close(conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None) -> None:
    if conn is not None:
        conn[1].close()
