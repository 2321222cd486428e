"""Issue 35 items 2 and 8: what a cluster answers cannot take the user's token elsewhere, hold
a command past its timeout, fill memory or crash it (trainops/cluster/bounded.py).

Each test runs a real HTTP server on the loopback playing the API server (a compromised rank
behind the pod proxy answers through it), and the real client (pykube-ng over requests) with a
kubeconfig holding a bearer token."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.cluster.conftest import CONTEXT, write_kubeconfig
from trainops.cluster.bounded import MAX_RESPONSE_BYTES
from trainops.cluster.client import Client
from trainops.cluster.errors import ClusterError
from trainops.cluster.kubeconfig import resolve
from trainops.core.limits import MAX_DEPTH

TOKEN = "test-token-not-a-secret"  # write_kubeconfig's
Handler = Callable[[BaseHTTPRequestHandler], None]


class _Server:
    """A loopback HTTP server answering every GET with `handler`; the requests it saw."""

    def __init__(self, handler: Handler) -> None:
        self.seen: list[dict[str, str]] = []
        self.stop = threading.Event()
        outer = self

        class _Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.seen.append({k.lower(): v for k, v in self.headers.items()})
                # The client hanging up is what the bound is for.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    handler(self)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=10)


@pytest.fixture
def serve() -> Iterator[Callable[[Handler], _Server]]:
    servers: list[_Server] = []

    def start(handler: Handler) -> _Server:
        servers.append(_Server(handler))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def _client(tmp_path: Path, server: _Server, timeout: float = 2.0) -> Client:
    config = write_kubeconfig(tmp_path / "kubeconfig", server.url)
    return Client(resolve(config, CONTEXT), timeout=timeout)


def _headers(request: BaseHTTPRequestHandler, status: int, **headers: str) -> None:
    request.send_response(status)
    for key, value in headers.items():
        request.send_header(key.replace("_", "-"), value)
    request.end_headers()


def test_a_redirect_is_not_followed_with_the_token(
    tmp_path: Path, serve: Callable[[Handler], _Server]
) -> None:
    """A rank's metrics endpoint answers 302 to another host: pykube-ng re-sent the bearer
    token there. Now the redirect is refused, naming where it pointed, and the other host
    sees nothing."""
    thief = serve(lambda r: _headers(r, 200, Content_Length="0"))
    api = serve(lambda r: _headers(r, 302, Location=f"{thief.url}/steal", Content_Length="0"))
    client = _client(tmp_path, api)
    with pytest.raises(ClusterError, match=r"redirecting to 127\.0\.0\.1:") as err:
        client.pod_proxy("ml-vision", "rank-0", 9090, "metrics")
    assert "does not follow redirects" in str(err.value)
    assert api.seen and api.seen[0]["authorization"] == f"Bearer {TOKEN}"
    assert thief.seen == [], thief.seen


def test_a_drip_fed_answer_is_cut_at_the_request_timeout(
    tmp_path: Path, serve: Callable[[Handler], _Server]
) -> None:
    """A body sent a byte at a time never trips requests' per-read timeout; the whole answer
    must arrive within --request-timeout (here 1 s, while the server drips for 30 s)."""
    finished = threading.Event()

    def drip(request: BaseHTTPRequestHandler) -> None:
        _headers(request, 200, Content_Type="text/plain", Content_Length="60")
        for _ in range(60):
            request.wfile.write(b"x")
            request.wfile.flush()
            time.sleep(0.5)
        finished.set()

    client = _client(tmp_path, serve(drip), timeout=1.0)
    with pytest.raises(ClusterError, match=r"did not finish answering within 1s"):
        client.pod_proxy("ml-vision", "rank-0", 9090, "metrics")
    assert not finished.is_set()  # given up while the server was still dripping


def test_an_answer_larger_than_the_bound_is_refused(
    tmp_path: Path, serve: Callable[[Handler], _Server]
) -> None:
    size = MAX_RESPONSE_BYTES + 1024 * 1024

    def flood(request: BaseHTTPRequestHandler) -> None:
        _headers(request, 200, Content_Type="text/plain", Content_Length=str(size))
        block = b"0" * (1024 * 1024)
        for _ in range(size // len(block)):
            request.wfile.write(block)

    client = _client(tmp_path, serve(flood), timeout=30.0)
    with pytest.raises(ClusterError, match=f"more than {MAX_RESPONSE_BYTES:,} bytes"):
        client.logs("ml-vision", "rank-0", "pytorch", False, 100)


def test_json_nested_100000_deep_is_one_line_not_a_traceback(
    tmp_path: Path, serve: Callable[[Handler], _Server]
) -> None:
    body = b"[" * 100_000 + b"]" * 100_000

    def deep(request: BaseHTTPRequestHandler) -> None:
        _headers(request, 200, Content_Type="application/json", Content_Length=str(len(body)))
        request.wfile.write(body)

    client = _client(tmp_path, serve(deep))
    with pytest.raises(ClusterError, match=f"nested more than {MAX_DEPTH} levels"):
        client.resource("v1", "Pod")
