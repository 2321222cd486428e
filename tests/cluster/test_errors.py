"""Every error a user meets talking to a cluster: one line on stderr, exit 2, no traceback.

Against the API emulator (kmock on 127.0.0.1) for HTTP answers, and against loopback
sockets for the transport failures: a port that accepts and never answers, a closed
port, and a TLS server whose certificate the kubeconfig does not trust. No real cluster.
"""

from __future__ import annotations

import http.server
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import kmock
import pytest

from tests.cluster.conftest import response, run_cli, write_kubeconfig
from tests.tools import require_tool
from trainops.cluster.emulator import reply
from trainops.cluster.emulator_thread import RunningEmulator

TRAINING = ("pytorchjobs", "tfjobs", "mpijobs", "trainjobs")


def _status(
    capsys: pytest.CaptureFixture[str], repo: Path, kubeconfig: Path | None, *extra: str
) -> tuple[int, str, str]:
    config = ["--kubeconfig", str(kubeconfig)] if kubeconfig else []
    return run_cli(
        capsys, "--root", str(repo), "status", "--cluster", "cloud-h100", *config, *extra
    )


def _one_line_error(code: int, out: str, err: str) -> str:
    assert code == 2, err
    assert out == ""
    assert err.startswith("error: ") and err.endswith("\n") and err.count("\n") == 1, err
    assert "Traceback" not in err
    return err[len("error: ") : -1]


def test_no_kubeconfig(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    message = _one_line_error(*_status(capsys, repo, None))
    assert message.startswith(f"no kubeconfig: {tmp_path}/home/.kube/config does not exist")
    assert "KUBECONFIG" in message


def test_kubeconfig_option_names_a_missing_file(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    message = _one_line_error(*_status(capsys, repo, tmp_path / "nope"))
    assert message == f"--kubeconfig {tmp_path}/nope: no such file"


def test_unknown_context(repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]) -> None:
    message = _one_line_error(*_status(capsys, repo, kubeconfig, "--context", "prod"))
    assert message == (
        f"unknown context 'prod' (--context): {kubeconfig} defines elsewhere, trainops-test;"
        " fix the name or pass --context"
    )


def test_unknown_context_from_the_profile_names_the_profile(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_kubeconfig(tmp_path / "other", "http://127.0.0.1:1")
    text = config.read_text().replace("trainops-test", "staging")
    config.write_text(text)
    message = _one_line_error(*_status(capsys, repo, config))
    assert message.startswith(
        "unknown context 'trainops-test' (`context` in clusters/cloud-h100.yaml):"
    )


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback port that accepts connections and never answers a byte."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield sock.getsockname()[1]


def test_server_that_does_not_answer_says_the_timeout(
    repo: Path, tmp_path: Path, silent_port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    server = f"http://127.0.0.1:{silent_port}"
    config = write_kubeconfig(tmp_path / "kubeconfig", server)
    started = time.monotonic()
    result = _status(capsys, repo, config, "--request-timeout", "0.5")
    elapsed = time.monotonic() - started
    message = _one_line_error(*result)
    assert message.startswith(
        f"the API server {server} (context trainops-test) did not answer within 0.5s"
    )
    assert elapsed < 10  # one request timed out, no retries piled up


def test_closed_port_cannot_connect(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = write_kubeconfig(tmp_path / "kubeconfig", f"http://127.0.0.1:{port}")
    message = _one_line_error(*_status(capsys, repo, config, "--request-timeout", "2"))
    assert message.startswith(f"cannot connect to the API server http://127.0.0.1:{port}")


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[str]:
    """An HTTPS server on loopback with a self-signed certificate nobody trusts."""
    openssl = require_tool("openssl")
    cert, key = tmp_path / "server.crt", tmp_path / "server.key"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    httpd = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    httpd.handle_error = lambda request, address: None  # type: ignore[method-assign]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_tls_failure(
    repo: Path, tmp_path: Path, tls_server: str, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_kubeconfig(tmp_path / "kubeconfig", tls_server)
    message = _one_line_error(*_status(capsys, repo, config, "--request-timeout", "5"))
    assert message.startswith(f"TLS failure talking to {tls_server} (context trainops-test):")
    assert "CERTIFICATE_VERIFY_FAILED" in message or "certificate verify failed" in message


def test_401_rejected_credentials(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    api.call(
        lambda e: e[kmock.method.GET] << (lambda: reply(401, response("errors", "unauthorized")))
    )
    message = _one_line_error(*_status(capsys, repo, kubeconfig))
    assert message == (
        f"401 Unauthorized from {api.url} (context trainops-test): the credentials of user"
        " 'alice' were rejected; log in again or renew the token in the kubeconfig (Unauthorized)"
    )
    sent = api.requests[0]
    assert sent.headers["Authorization"] == "Bearer test-token-not-a-secret"


def test_403_names_verb_resource_and_namespace(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    api.call(
        lambda e: (
            e["list", kmock.resource("kubeflow.org", "v1", "pytorchjobs")]
            << (lambda: reply(403, response("errors", "forbidden-list-pytorchjobs")))
        )
    )
    message = _one_line_error(*_status(capsys, repo, kubeconfig))
    assert message.startswith(
        "403 Forbidden: not allowed to list pytorchjobs.kubeflow.org in namespace ai-training"
        f" on {api.url} (context trainops-test); ask for RBAC that grants it ("
    )


def test_training_crds_not_installed(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def uninstall(e: RunningEmulator) -> None:
        for r in [r for r in e.resources if r.plural in TRAINING]:
            e.resources.pop(r)

    api.call(uninstall)
    message = _one_line_error(*_status(capsys, repo, kubeconfig))
    assert message == (
        f"{api.url} (context trainops-test) serves none of the training kinds (PyTorchJob,"
        " TFJob, MPIJob, TrainJob): the Kubeflow Training Operator's CRDs are not installed"
    )
    discovery = [r.url.path for r in api.requests if r.url.path.startswith("/apis/")]
    assert "/apis/kubeflow.org/v1/" in discovery  # pykube-ng's discovery path, answered 404


def test_namespace_missing(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    api.call(
        lambda e: e.objects.__delitem__(
            (kmock.resource("", "v1", "namespaces"), None, "ai-training")
        )
    )
    message = _one_line_error(*_status(capsys, repo, kubeconfig))
    assert message == (
        f"namespace 'ai-training' does not exist on cluster cloud-h100 at {api.url} (context"
        " trainops-test); create it (`kubectl create namespace ai-training`) or remove it from"
        " clusters/cloud-h100.yaml"
    )


def test_unknown_cluster_profile(
    repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run_cli(
        capsys,
        "--root",
        str(repo),
        "status",
        "--cluster",
        "cloud-h10",
        "--kubeconfig",
        str(kubeconfig),
    )
    assert _one_line_error(*result) == (
        "--cluster: unknown cluster 'cloud-h10' (known: cloud-h100, onprem-a100, onprem-h200)"
    )


def test_403_on_get_goes_through_pykube_status_error_too(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A GET refused with a v1 Status body (`Content-Type: application/json`, as a real API
    server sends it) surfaces in pykube-ng as its own HTTPError: same one line."""
    forbidden = response("errors", "forbidden-list-pytorchjobs")
    forbidden["message"] = forbidden["message"].replace("cannot list", "cannot get")
    api.call(
        lambda e: (
            e[
                "get",
                kmock.resource("kubeflow.org", "v1", "pytorchjobs"),
                kmock.name("resnet50-ddp"),
            ]
            << (lambda: reply(403, forbidden))
        )
    )
    result = run_cli(
        capsys, "--root", str(repo), "explain", "resnet50-ddp", "--cluster", "cloud-h100",
        "--kubeconfig", str(kubeconfig),
    )  # fmt: skip
    message = _one_line_error(*result)
    assert message.startswith(
        "403 Forbidden: not allowed to get pytorchjobs.kubeflow.org in namespace ml-vision"
    )
    assert 'cannot get resource "pytorchjobs"' in message


def test_malformed_server_url_is_one_line(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_kubeconfig(tmp_path / "kubeconfig", "127.0.0.1:6443")  # no scheme
    message = _one_line_error(*_status(capsys, repo, config))
    assert message == (
        f"context 'trainops-test' in {config}: server '127.0.0.1:6443' of cluster 'emulator'"
        " is not an https:// URL; fix the kubeconfig"
    )


# nginx's own 502 page (src/http/ngx_http_special_response.c, `ngx_http_error_502_page` with
# its tail), what an ingress or auth proxy in front of the API server answers when the server
# behind it is down.
NGINX_502 = (
    "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
    "<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n"
    "</body>\r\n</html>\r\n"
)


def test_a_proxys_html_error_page_is_its_status_line(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On main: `502 from ... on list pytorchjobs.kubeflow.org ...: <html>`."""
    api.call(
        lambda e: (
            e["list", kmock.resource("kubeflow.org", "v1", "pytorchjobs")]
            << (lambda: reply(502, NGINX_502.encode(), "text/html"))
        )
    )
    message = _one_line_error(*_status(capsys, repo, kubeconfig))
    assert message.startswith(f"502 from {api.url} (context trainops-test) on list ")
    assert message.endswith(
        ": 502 Bad Gateway (an HTML error page: a proxy or load balancer answered, not the API"
        " server)"
    ), message
    assert "<" not in message
