"""`trainops status` reads the current logs of running jobs' pods: Hung, and NCCL on TCP.

Same cluster states as test_explain_hang.py (the kubelet's timestamped logs, NCCL's INFO
lines in NCCL 2.x's format). On main both jobs read `Running` with nothing more to say.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from tests.cluster.conftest import run_cli
from tests.cluster.test_explain_hang import NCCL_IB, NCCL_SOCKET, _nccl, _running, _stamped, _step
from trainops.cluster.emulator_thread import RunningEmulator


def _status(
    capsys: pytest.CaptureFixture[str], repo: Path, kubeconfig: Path, cluster: str, fmt: str
) -> tuple[int, str]:
    code, out, err = run_cli(
        capsys, "--root", str(repo), "status", "--cluster", cluster,
        "--kubeconfig", str(kubeconfig), "--context", "trainops-test", "--format", fmt,
    )  # fmt: skip
    assert code == 0, err
    return code, out


def test_status_shows_a_hung_job(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    now = dt.datetime.now(dt.UTC)
    _running(api, repo, {"master-0": _stamped([(62, _step(1180)), (41, _step(1200))], now)})
    _, out = _status(capsys, repo, kubeconfig, "cloud-h100", "json")
    [job] = [j for j in json.loads(out)["jobs"] if j["name"] == "resnet50-ddp" and j["created"]]
    assert job["phase"] == "Hung"
    [finding] = job["findings"]
    assert finding.startswith("Hung: all pods run but no training step completed for 41 min")


def test_status_names_nccl_on_sockets_on_an_rdma_cluster(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    now = dt.datetime.now(dt.UTC)
    _running(api, repo, {
        "master-0": _nccl(NCCL_IB, "master-0", 11, now),
        "worker-0": _nccl(NCCL_SOCKET, "worker-0", 12, now),
    }, cluster="onprem-a100")  # fmt: skip
    _, out = _status(capsys, repo, kubeconfig, "onprem-a100", "table")
    row = next(line for line in out.splitlines() if " resnet50-ddp " in line)
    assert row.split()[3] == "Running"  # it trains, over the wrong network
    assert (
        "ml-vision/resnet50-ddp: SocketFallback: NCCL runs over TCP sockets, not RDMA, on pod(s)"
        " resnet50-ddp-worker-0 of RDMA cluster onprem-a100" in out
    )
