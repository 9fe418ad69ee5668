"""HTTP_PROXY / HTTPS_PROXY / NO_PROXY for LLM endpoints: what a cluster's users need to reach their vLLM servers."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from peras.llm.transport import FastHTTPTransport, OpenAITransport, environment_proxy, make_transport
from support.fake_openai import FakeOpenAI, instant
from support.forward_proxy import ForwardProxy
from tests.helpers import run_cli

CLUSTER_HOST = "llm.cluster.invalid"  # a name only the proxy can resolve (.invalid never resolves, RFC 6761)
PROXY_VARIABLES = (
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "no_proxy",
)


@pytest.fixture(autouse=True)
def clean_proxy_environment(monkeypatch):
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.mark.core
@pytest.mark.parametrize(
    ("env", "url", "proxy"),
    [
        # no proxy configured
        ({}, "http://gpu:8000/v1", None),
        # the http proxy for http URLs, the https one for https URLs
        ({"HTTP_PROXY": "http://p:3128"}, "http://gpu:8000/v1", "http://p:3128"),
        ({"HTTP_PROXY": "http://p:3128"}, "https://api.example.com/v1", None),
        ({"HTTPS_PROXY": "http://s:3128"}, "https://api.example.com/v1", "http://s:3128"),
        # lower case wins over upper case, as in curl
        ({"HTTP_PROXY": "http://upper:1", "http_proxy": "http://lower:2"}, "http://gpu:8000/v1", "http://lower:2"),
        # ALL_PROXY when the scheme has none; a proxy given without a scheme is http://
        ({"ALL_PROXY": "p:3128"}, "http://gpu:8000/v1", "http://p:3128"),
        # NO_PROXY: exact host, domain suffix, host:port, and *
        ({"HTTP_PROXY": "http://p:1", "NO_PROXY": "gpu"}, "http://gpu:8000/v1", None),
        ({"HTTP_PROXY": "http://p:1", "NO_PROXY": ".cluster.local"}, "http://gpu.cluster.local:8000/v1", None),
        ({"HTTP_PROXY": "http://p:1", "NO_PROXY": "gpu:8000"}, "http://gpu:8000/v1", None),
        ({"HTTP_PROXY": "http://p:1", "NO_PROXY": "gpu:9000"}, "http://gpu:8000/v1", "http://p:1"),
        ({"HTTP_PROXY": "http://p:1", "no_proxy": "GPU"}, "http://gpu:8000/v1", None),
        ({"HTTP_PROXY": "http://p:1", "NO_PROXY": "*"}, "http://gpu:8000/v1", None),
        ({"HTTP_PROXY": "http://p:1", "NO_PROXY": "other"}, "http://gpu:8000/v1", "http://p:1"),
        # loopback never goes through a proxy (the embedded model listens there)
        ({"HTTP_PROXY": "http://p:1"}, "http://127.0.0.1:8080/v1", None),
        ({"HTTP_PROXY": "http://p:1"}, "http://localhost:8080/v1", None),
        ({"HTTP_PROXY": "http://p:1"}, "http://[::1]:8080/v1", None),
    ],
)
def test_environment_proxy_follows_curl_and_httpx(monkeypatch, env, url, proxy):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert environment_proxy(url) == proxy


@pytest.mark.core
def test_a_proxy_the_fast_transport_cannot_speak_goes_to_the_sdk(monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", "https://p:3128")  # TLS to the proxy: httpx does it
    assert isinstance(make_transport("http://gpu:8000/v1", None, 5.0), OpenAITransport)
    monkeypatch.setenv("HTTP_PROXY", "http://p:3128")
    transport = make_transport("http://gpu:8000/v1", None, 5.0)
    assert isinstance(transport, FastHTTPTransport) and transport.proxy is not None


@pytest.fixture
def sample_warehouse(tmp_path: Path, capsys) -> Path:
    path = tmp_path / "peras.duckdb"
    assert run_cli(capsys, "ingest", "sample", "--warehouse", str(path)).exit_code == 0
    return path


def judge_two_pairs(capsys, base_url: str, warehouse: Path):
    return run_cli(
        capsys,
        "judge",
        "sample",
        "--base-url",
        base_url,
        "--model",
        "fake-model",
        "--limit-pairs",
        "2",
        "--personality",
        "default",
        "--cot",
        "without",
        "--warehouse",
        str(warehouse),
    )


@pytest.mark.integration
def test_judge_reaches_an_endpoint_only_the_proxy_can_reach(capsys, monkeypatch, sample_warehouse):
    with FakeOpenAI(instant) as server:
        port = int(server.base_url.rsplit(":", 1)[1].split("/")[0])
        with ForwardProxy(routes={CLUSTER_HOST: ("127.0.0.1", port)}, credentials=("ann", "s3cr@t")) as proxy:
            monkeypatch.setenv("HTTP_PROXY", proxy.url.replace("http://", "http://ann:s3cr%40t@"))
            monkeypatch.setenv("NO_PROXY", "127.0.0.1")  # the Prefect API on loopback stays direct
            result = judge_two_pairs(capsys, f"http://{CLUSTER_HOST}:{port}/v1", sample_warehouse)
            through = proxy.to(CLUSTER_HOST)
        received = list(server.requests)
    assert result.exit_code == 0, result.err
    assert result.out.startswith("sample-fake-model: 2 judgments (2 new; 4 requests sent, 0 reused)")
    # every request the endpoint saw came through the proxy, with the proxy's credentials
    assert [(r.method, r.path) for r in through] == [(r.method, r.path) for r in received]
    assert [r.path for r in through].count("/v1/chat/completions") == 4
    assert {r.proxy_authorization for r in through} == {"Basic YW5uOnMzY3JAdA=="}  # ann:s3cr@t
    assert {r.status for r in through} == {200}


@pytest.mark.integration
def test_no_proxy_sends_the_endpoint_past_the_proxy(capsys, monkeypatch, sample_warehouse):
    with ForwardProxy() as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.setenv("NO_PROXY", f"127.0.0.1,{CLUSTER_HOST}")
        result = judge_two_pairs(capsys, f"http://{CLUSTER_HOST}:9/v1", sample_warehouse)
        assert proxy.to(CLUSTER_HOST) == []  # asked directly, where the name does not resolve
    assert result.exit_code == 1
    assert CLUSTER_HOST in result.err and "proxy" not in result.err


@pytest.mark.integration
def test_loopback_endpoints_never_go_through_the_proxy(capsys, monkeypatch, sample_warehouse):
    with FakeOpenAI(instant) as server, ForwardProxy() as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.setenv("NO_PROXY", "")
        transport = make_transport(server.base_url, None, 5.0)
        status, _, _ = asyncio.run(transport.models(5.0))
        assert (status, transport.proxy, proxy.requests) == (200, None, [])


@pytest.mark.core
def test_an_unreachable_proxy_is_named_in_the_error(monkeypatch):
    from support.prefect_server import free_port

    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{free_port()}")
    transport = make_transport(f"http://{CLUSTER_HOST}:8000/v1", None, 5.0)
    with pytest.raises(Exception) as caught:
        asyncio.run(transport.models(5.0))
    assert str(caught.value).startswith(
        f"proxy {transport.proxy.url} (from HTTP_PROXY/ALL_PROXY; NO_PROXY bypasses it)"
    )
