"""`trainops top` against the real Prometheus (Debian's `prometheus`, 2.42 here), which scrapes
exporters served on 127.0.0.1 in the formats of the real ones:
- two trainer pods, each serving the trainer's metrics without Kubernetes labels (as
  trainer/metrics.py does); the scrape config gives each target the `namespace`, `service` and
  `pod` labels that prometheus-operator v0.93's ServiceMonitor relabelling gives it
  (pkg/prometheus/promcfg.go: `__meta_kubernetes_namespace`, `..._service_name`,
  `..._pod_name`);
- a DCGM exporter serving `DCGM_FI_DEV_GPU_UTIL` / `DCGM_FI_DEV_FB_USED` per GPU with the
  `namespace`/`pod` of the pod using it, scraped with `honor_labels` as the GPU Operator's
  ServiceMonitor does (dcgm-exporter docs, "Kubernetes mapping").
Prometheus answers `top`'s queries through its HTTP API, as it would in the cluster.
"""

from __future__ import annotations

import http.server
import json
import re
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from tests.cluster.conftest import run_cli
from tests.tools import REPO, add_monitoring, require_tool, trainops
from trainops.cli import build_parser
from trainops.cluster.emulator import reply
from trainops.cluster.emulator_thread import RunningEmulator

NS = "ai-training"
PODS = ("llm-finetune-master-0", "llm-finetune-worker-0")
LAST_STEP_AGO = 30.0


def _trainer(pod: str) -> str:
    index = PODS.index(pod)
    return (
        "# TYPE trainops_trainer_step gauge\n"
        "trainops_trainer_step 120\n"
        "# TYPE trainops_trainer_samples_per_second gauge\n"
        f"trainops_trainer_samples_per_second {250.5 + index}\n"
        "# TYPE trainops_trainer_loss gauge\n"
        "trainops_trainer_loss 1.875\n"
        "# TYPE trainops_trainer_last_step_timestamp_seconds gauge\n"
        f"trainops_trainer_last_step_timestamp_seconds {time.time() - LAST_STEP_AGO}\n"
    )


def _dcgm() -> str:
    lines = ["# TYPE DCGM_FI_DEV_GPU_UTIL gauge", "# TYPE DCGM_FI_DEV_FB_USED gauge"]
    for pod, utils in zip(PODS, ((90, 70), (40, 60)), strict=True):
        for gpu, util in enumerate(utils):
            labels = f'gpu="{gpu}",UUID="GPU-{pod}-{gpu}",namespace="{NS}",pod="{pod}"'
            lines.append(f"DCGM_FI_DEV_GPU_UTIL{{{labels}}} {util}")
            lines.append(f"DCGM_FI_DEV_FB_USED{{{labels}}} 30000")
    # A GPU of a pod that is not the job's (a notebook) must not show up.
    lines.append(f'DCGM_FI_DEV_GPU_UTIL{{gpu="0",namespace="{NS}",pod="notebook-0"}} 3')
    return "\n".join(lines) + "\n"


class _Exporters(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        name = self.path.strip("/")
        body = _dcgm() if name == "dcgm" else _trainer(name) if name in PODS else None
        if body is None:
            self.send_error(404)
            return
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def exporters() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Exporters)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture(scope="module")
def prometheus(exporters: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    binary = require_tool("prometheus")
    work = tmp_path_factory.mktemp("prometheus")
    trainer_jobs = [
        {
            "job_name": f"trainer-{pod}",
            "metrics_path": f"/{pod}",
            "static_configs": [
                {
                    "targets": [exporters],
                    "labels": {"namespace": NS, "service": "llm-finetune-metrics", "pod": pod},
                }
            ],
        }
        for pod in PODS
    ]
    dcgm = {
        "job_name": "dcgm",
        "metrics_path": "/dcgm",
        "honor_labels": True,
        "static_configs": [{"targets": [exporters]}],
    }
    config = {"global": {"scrape_interval": "1s"}, "scrape_configs": [*trainer_jobs, dcgm]}
    (work / "prometheus.yml").write_text(yaml.safe_dump(config))
    url = f"http://127.0.0.1:{_free_port()}"
    process = subprocess.Popen(
        [
            binary,
            f"--config.file={work / 'prometheus.yml'}",
            f"--storage.tsdb.path={work / 'data'}",
            f"--web.listen-address={url.removeprefix('http://')}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                answer = requests.get(
                    f"{url}/api/v1/query", params={"query": "DCGM_FI_DEV_FB_USED"}, timeout=2
                ).json()
                if len(answer["data"]["result"]) == 4 and _scraped(url):
                    break
            except (requests.RequestException, ValueError, KeyError):
                pass
            time.sleep(0.5)
        else:
            pytest.fail("Prometheus did not scrape the exporters within 60 s")
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def _scraped(url: str) -> bool:
    answer = requests.get(
        f"{url}/api/v1/query", params={"query": "trainops_trainer_loss"}, timeout=2
    ).json()
    return len(answer["data"]["result"]) == len(PODS)


@pytest.mark.slow
def test_top_shows_each_pod_from_prometheus(prometheus: str) -> None:
    result = trainops(
        REPO, "top", "llm-finetune", "--cluster", "cloud-h100", "--prometheus", prometheus,
        "--format", "json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    pods = {row["pod"]: row for row in out["pods"]}
    assert set(pods) == set(PODS), "the notebook's GPU is not the job's"
    master, worker = pods[PODS[0]], pods[PODS[1]]
    assert master["gpu_util_percent"] == 80 and worker["gpu_util_percent"] == 50
    assert master["gpu_memory_mib"] == 60000
    assert master["samples_per_second"] == 250.5 and worker["samples_per_second"] == 251.5
    assert master["loss"] == 1.875 and master["step"] == 120
    assert LAST_STEP_AGO - 5 <= master["last_step_age_seconds"] <= LAST_STEP_AGO + 60

    table = trainops(
        REPO, "top", "llm-finetune", "--cluster", "cloud-h100", "--prometheus", prometheus
    )
    assert table.returncode == 0, table.stderr
    header, *rows = table.stdout.splitlines()
    assert header.split() == ["POD", "GPU%", "GPU", "MEM", "SAMPLES/S", "LOSS", "STEP", "LAST",
                              "STEP"]  # fmt: skip
    assert rows[0].split()[:6] == [PODS[0], "80", "60000Mi", "250.5", "1.875", "120"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ((), "error: no Prometheus for cluster `cloud-h100`: set `monitoring.prometheusUrl`"),
        (("--prometheus", "http://127.0.0.1:9"), "error: cannot reach Prometheus at"),
    ],
)
def test_no_prometheus_is_one_line_and_exit_2(extra: tuple[str, ...], message: str) -> None:
    result = trainops(REPO, "top", "llm-finetune", "--cluster", "cloud-h100", *extra)
    assert result.returncode == 2
    assert result.stderr.startswith(message) and result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr


def test_something_else_than_prometheus_is_one_line(exporters: str) -> None:
    """An address that answers HTTP but not Prometheus' API (here: a 404 page)."""
    result = trainops(
        REPO,
        "top",
        "llm-finetune",
        "--cluster",
        "cloud-h100",
        "--prometheus",
        f"http://{exporters}",
    )
    assert result.returncode == 2
    assert "without Prometheus' JSON" in result.stderr and result.stderr.count("\n") == 1


def test_documented_top_commands_parse() -> None:
    shown = [
        line.split("trainops ", 1)[1].split("#")[0].split()
        for line in (REPO / "docs" / "monitoring.md").read_text().splitlines()
        if line.startswith(("trainops top", "$ trainops top"))
    ]
    assert shown
    for argv in shown:
        build_parser().parse_args(argv)


PROXY = "/api/v1/namespaces/monitoring/services/prometheus-operated:9090/proxy"


@pytest.mark.slow
def test_top_through_the_api_servers_service_proxy(
    prometheus: str,
    api: RunningEmulator,
    repo: Path,
    kubeconfig: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`prometheusUrl` as a service-proxy path: the query goes to the API server (the kmock
    emulator, standing in for kube-apiserver's `services/proxy` subresource) with the
    kubeconfig's token, which hands it to the real Prometheus."""
    seen: list[str] = []

    async def proxy(request: Any) -> Any:
        seen.append(request.headers.get("Authorization", ""))
        answer = requests.get(f"{prometheus}/api/v1/query", params=dict(request.params), timeout=5)
        return reply(answer.status_code, answer.json())

    api.call(
        lambda emulator: emulator["get", re.compile(re.escape(PROXY) + "/api/v1/query")] << proxy
    )
    profile = repo / "clusters" / "cloud-h100.yaml"
    add_monitoring(profile, f"  prometheusUrl: {PROXY}")
    code, out, err = run_cli(
        capsys, "--root", str(repo), "top", "llm-finetune", "--cluster", "cloud-h100",
        "--kubeconfig", str(kubeconfig), "--format", "json",
    )  # fmt: skip
    assert code == 0, err
    pods = {row["pod"]: row for row in json.loads(out)["pods"]}
    assert set(pods) == set(PODS) and pods[PODS[0]]["gpu_util_percent"] == 80
    assert seen and all(header == "Bearer test-token-not-a-secret" for header in seen)
