"""A tiny HTTP forward proxy on loopback that records what went through it: for proxy tests.

    with ForwardProxy(routes={"llm.cluster.invalid": ("127.0.0.1", server_port)}) as proxy:
        os.environ["HTTP_PROXY"] = proxy.url
        ...
        assert [r.host for r in proxy.requests] == [...]

It takes requests in absolute form (`POST http://host:port/path HTTP/1.1`), as clients send them to a proxy,
and forwards them: `routes` maps a host name only the proxy knows (like a cluster's internal name) to a real
address. With `credentials`, a request without the matching Proxy-Authorization gets 407.
"""

from __future__ import annotations

import base64
import http.client
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

HOP_BY_HOP = {"connection", "keep-alive", "proxy-authorization", "proxy-connection", "te", "trailer", "upgrade"}


@dataclass(frozen=True)
class ProxiedRequest:
    """One request the proxy forwarded (or refused)."""

    method: str
    host: str
    port: int
    path: str
    proxy_authorization: str | None
    status: int


class ForwardProxy:
    """The proxy in a background thread; a context manager."""

    def __init__(
        self, routes: dict[str, tuple[str, int]] | None = None, credentials: tuple[str, str] | None = None
    ) -> None:
        self.routes = routes or {}
        self.expected_auth = (
            "Basic " + base64.b64encode(f"{credentials[0]}:{credentials[1]}".encode()).decode() if credentials else None
        )
        self.requests: list[ProxiedRequest] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="forward-proxy", daemon=True)

    @property
    def url(self) -> str:
        """What HTTP_PROXY should hold."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def to(self, host: str) -> list[ProxiedRequest]:
        """The requests that went to `host`."""
        with self._lock:
            return [r for r in self.requests if r.host == host]

    def record(self, request: ProxiedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def __enter__(self) -> ForwardProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)


def _handler_for(proxy: ForwardProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the clients expect

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
            pass

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            self._forward()

        def do_POST(self) -> None:  # noqa: N802
            self._forward()

        def _forward(self) -> None:
            target = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            auth = self.headers.get("Proxy-Authorization")
            host, port = target.hostname or "", target.port or 80
            if target.scheme != "http" or not host:
                return self._reply(400, b"absolute-form http:// request expected", host, port, auth, target.path)
            if proxy.expected_auth is not None and auth != proxy.expected_auth:
                return self._reply(407, b"proxy authentication required", host, port, auth, target.path)
            address = proxy.routes.get(host, (host, port))
            connection = http.client.HTTPConnection(*address, timeout=60)
            try:
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
                path = target.path + (f"?{target.query}" if target.query else "")
                connection.request(self.command, path, body=body, headers=headers)
                answer = connection.getresponse()
                content = answer.read()
                kept = [(k, v) for k, v in answer.getheaders() if k.lower() not in HOP_BY_HOP | {"transfer-encoding"}]
            except OSError as exc:
                return self._reply(502, f"bad gateway: {exc}".encode(), host, port, auth, target.path)
            finally:
                connection.close()
            proxy.record(ProxiedRequest(self.command, host, port, target.path, auth, answer.status))
            self.send_response(answer.status)
            for name, value in kept:
                if name.lower() != "content-length":
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(content)))
            self.end_headers()
            self.wfile.write(content)

        def _reply(self, status: int, text: bytes, host: str, port: int, auth: str | None, path: str) -> None:
            proxy.record(ProxiedRequest(self.command, host, port, path, auth, status))
            self.send_response(status)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(text)))
            self.end_headers()
            self.wfile.write(text)

    return Handler
