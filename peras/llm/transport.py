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
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import unquote, urlsplit
from urllib.request import getproxies_environment

import orjson

from peras.llm.http1 import _Connection

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
    """Keep-alive HTTP/1.1 client for plain http:// servers: a pool of idle connections, reused LIFO.

    Each connection is an asyncio protocol (`_Connection`) that parses its response as the bytes arrive and resolves
    one future: no stream reader, no per-request timer. Timeouts are kept by one sweep per transport that runs every
    tenth of the shortest timeout in flight (at most every second): a request fails between `timeout_s` and
    `timeout_s` plus that step after it was sent (120 s: at most 1 s late). Measured with `bench/bench_per_request.py
    --layers`: the stream reader and `asyncio.timeout` were ~40% of this transport's CPU per request.
    """

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
        headers = f"Host: {self.host}:{self.port}\r\nUser-Agent: peras\r\nAccept: application/json\r\n{auth}"
        self._headers = headers
        request_line = f"POST {self.prefix}/chat/completions HTTP/1.1\r\n"
        self._chat_head = f"{request_line}{headers}Content-Type: application/json\r\nContent-Length: ".encode("latin-1")
        self._idle: list[_Connection] = []
        self._busy: set[_Connection] = set()
        self._sweep: asyncio.TimerHandle | None = None

    def chat(self, body: dict[str, Any]) -> Coroutine[Any, Any, Response]:
        """POST /chat/completions with `body` (awaited as the other transport's is: the request's own coroutine,
        returned, not wrapped in another: one layer less to suspend and resume per request)."""
        data = orjson.dumps(body)  # UTF-8 JSON, compact, as json.dumps(ensure_ascii=False) writes it
        return self._request(b"%b%d\r\n\r\n%b" % (self._chat_head, len(data), data), self.timeout_s)

    async def models(self, timeout_s: float) -> Response:
        """GET /models."""
        head = f"GET {self.prefix}/models HTTP/1.1\r\n{self._headers}\r\n"
        return await self._request(head.encode("latin-1"), timeout_s)

    async def aclose(self) -> None:
        """Close every idle connection."""
        while self._idle:
            self._idle.pop().close()
        if self._sweep is not None:
            self._sweep.cancel()
            self._sweep = None

    async def _request(self, payload: bytes, timeout_s: float) -> Response:
        conn = self._take_idle()
        if conn is None:
            conn = await self._connect(timeout_s)
        loop = conn.loop  # the running loop, kept by the connection (asking for it costs a getpid() on Python 3.11)
        now = loop.time()
        waiter = conn.send(payload, now + timeout_s, timeout_s)
        self._busy.add(conn)
        self._watch(loop, now, timeout_s)
        try:
            status, headers, content, keep = await waiter
        except TransportError:
            conn.close()
            raise
        except asyncio.CancelledError:
            conn.close()  # a connection abandoned mid-request cannot be reused
            raise
        except (OSError, EOFError, ValueError) as exc:
            conn.close()
            raise TransportError("protocol", f"connection broken: {type(exc).__name__}: {exc}") from exc
        finally:
            self._busy.discard(conn)
        if keep and conn.reusable():
            self._idle.append(conn)
        else:
            conn.close()
        return status, headers, content

    def _watch(self, loop: asyncio.AbstractEventLoop, now: float, timeout_s: float) -> None:
        """Make sure a sweep runs within a tenth of `timeout_s` (at most a second) from `now` (the loop's time)."""
        due = now + min(1.0, timeout_s / 10)
        if self._sweep is not None:
            if self._sweep.when() <= due:
                return
            self._sweep.cancel()
        self._sweep = loop.call_at(due, self._sweep_now, loop)

    def _sweep_now(self, loop: asyncio.AbstractEventLoop) -> None:
        """Fail the requests whose time is up; run again while any is in flight."""
        self._sweep = None
        now = loop.time()
        step = 1.0
        for conn in self._busy:
            if conn.deadline <= now:
                conn.fail(TransportError("timeout", f"no answer within {conn.timeout_s:g} s"))
            else:
                step = min(step, conn.timeout_s / 10)
        if self._busy:
            self._sweep = loop.call_at(now + step, self._sweep_now, loop)

    def _take_idle(self) -> _Connection | None:
        # A server that closed an idle connection has already sent EOF on it: skip those, so a keep-alive timeout
        # on the server never costs a retry.
        while self._idle:
            conn = self._idle.pop()
            if conn.reusable():
                return conn
            conn.close()
        return None

    async def _connect(self, timeout_s: float) -> _Connection:
        host, port = (self.proxy.host, self.proxy.port) if self.proxy else (self.host, self.port)
        try:
            async with asyncio.timeout(timeout_s):
                _, conn = await asyncio.get_running_loop().create_connection(_Connection, host, port)
        except TimeoutError as exc:
            raise TransportError("timeout", f"no answer within {timeout_s:g} s") from exc
        except OSError as exc:
            via = f"proxy {self.proxy.url} (from HTTP_PROXY/ALL_PROXY; NO_PROXY bypasses it): " if self.proxy else ""
            raise TransportError("connect", f"{via}{type(exc).__name__}: {exc.strerror or exc}") from exc
        return conn
