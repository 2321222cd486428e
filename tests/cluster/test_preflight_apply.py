"""`trainops preflight --apply` against the API emulator (trainops/cluster/emulator.py: kmock, a
real HTTP server speaking the Kubernetes API, reached by pykube-ng as a cluster is).

The emulator runs no controller and no pod. What the MPI Operator and the kubelet would do is
played here by a thread, as the MPI Operator v0.8 does it (kubeflow/mpi-operator
pkg/controller/mpi_job_controller.go): once the MPIJob exists, a Launcher pod labelled
`training.kubeflow.org/job-name: <job>` and `training.kubeflow.org/job-role: launcher`
(`defaultLabels`) appears with all_reduce_perf's log (tests/render/fixtures/preflight, in
nccl-tests' format), and the MPIJob gets the condition `Succeeded` (or `Failed`) with status
True, as `updateMPIJobConditions` writes it from the Launcher Job's outcome. So these tests prove
the client's side: what is created, where the verdict and the log are read, the judgement, the
clean-up, and the errors; not that an operator runs the job.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.conftest import CREATED, run_cli, write_kubeconfig
from tests.tools import add_monitoring
from trainops.cluster import preflight
from trainops.cluster.emulator import ApiEmulator, _resource
from trainops.cluster.emulator_thread import RunningEmulator

LOG = Path(__file__).parent.parent / "render" / "fixtures" / "preflight"
LOG_FILE = LOG / "all_reduce_perf-4x8-h100.log"
IMAGE = "registry.example.com/nccl-tests:2.16.2-mpi"
NAMESPACE, NAME = "ai-training", "llm-finetune-nccl-preflight"
MPIJOBS = _resource("kubeflow.org/v2beta1", "mpijobs")
POLICIES = _resource("networking.k8s.io/v1", "networkpolicies")
NCCL_FAILURE = (
    "llm-finetune-nccl-preflight-worker-1:52:52 [0] NCCL INFO NET/IB : No device found.\n"
    "llm-finetune-nccl-preflight-worker-1:52:60 [0] include/socket.h:409 NCCL WARN"
    " Net : Connect to 10.0.3.7<40123> failed : Connection refused\n"
    "Test NCCL failure common.cu:1005 'unhandled system error'\n"
)


def _stored(emulator: ApiEmulator, resource: Any, name: str) -> dict[str, Any] | None:
    key = (resource, NAMESPACE, name)
    if key not in emulator.objects or emulator.objects[key].deleted:
        return None
    return dict(emulator.objects[key].raw)


def _operator(api: RunningEmulator, state: str, log: str, stop: threading.Event) -> None:
    """Once the MPIJob is created: its Launcher pod and log, then the condition `state`."""
    while not stop.is_set():
        job = api.call(lambda e: _stored(e, MPIJOBS, NAME))
        if job is not None:
            break
        time.sleep(0.02)
    else:
        return
    container = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    pod = f"{NAME}-launcher-x7k2p"
    api.add(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": pod,
                "namespace": NAMESPACE,
                "creationTimestamp": CREATED,
                "labels": {
                    "training.kubeflow.org/job-name": NAME,
                    "training.kubeflow.org/job-role": "launcher",
                    "training.kubeflow.org/operator-name": "mpi-operator",
                    "batch.kubernetes.io/job-name": f"{NAME}-launcher",
                },
            },
            "spec": {"containers": [{"name": container["name"], "image": container["image"]}]},
            "status": {"phase": "Succeeded" if state == "Succeeded" else "Failed"},
        }
    )
    api.call(lambda e: e.logs.__setitem__((NAMESPACE, pod, container["name"], False), log))
    job["status"] = {
        "conditions": [
            {"type": "Created", "status": "True", "reason": "MPIJobCreated"},
            {
                "type": state,
                "status": "True",
                "reason": f"MPIJob{state}",
                "message": f"MPIJob {NAMESPACE}/{NAME} {state.lower()}.",
            },
        ]
    }
    api.add(job)


@pytest.fixture
def fast_poll(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(preflight, "POLL_SECONDS", 0.05)


def _with_minimum(repo: Path, minimum: str) -> Path:
    profile = repo / "clusters" / "cloud-h100.yaml"
    add_monitoring(profile, f"  minBusBandwidthGBps: {minimum}")
    return repo


def _apply(
    capsys: pytest.CaptureFixture[str], repo: Path, kubeconfig: Path, *extra: str
) -> tuple[int, str, str]:
    return run_cli(
        capsys, "--root", str(repo), "preflight", "llm-finetune", "--cluster", "cloud-h100",
        "--image", IMAGE, "--kubeconfig", str(kubeconfig), "--apply", "--timeout", "20", *extra,
    )  # fmt: skip


@pytest.fixture
def operator(api: RunningEmulator) -> Iterator[Any]:
    """Start the emulated operator with a state and a log; stopped after the test."""
    stop = threading.Event()
    threads: list[threading.Thread] = []

    def start(state: str, log: str) -> None:
        thread = threading.Thread(target=_operator, args=(api, state, log, stop), daemon=True)
        thread.start()
        threads.append(thread)

    yield start
    stop.set()
    for thread in threads:
        thread.join(timeout=10)


@pytest.mark.usefixtures("fast_poll")
@pytest.mark.parametrize(("minimum", "code"), [("300", 0), ("350", 1)])
def test_the_run_is_created_judged_and_deleted(
    capsys: pytest.CaptureFixture[str],
    *,
    repo: Path,
    kubeconfig: Path,
    api: RunningEmulator,
    operator: Any,
    minimum: str,
    code: int,
) -> None:
    operator("Succeeded", LOG_FILE.read_text())
    status, out, err = _apply(capsys, _with_minimum(repo, minimum), kubeconfig)
    assert (status, err) == (code, "")
    assert f"preflight: created MPIJob {NAMESPACE}/{NAME}" in out
    assert f"preflight: read the log of launcher pod {NAME}-launcher-x7k2p" in out
    assert f"at 8589934592 B: 307.83 GB/s (minimum {minimum})" in out
    assert out.rstrip().endswith("ok") == (code == 0)
    # Both objects were created (POST) and are gone again.
    posted = {r.resource.plural for r in api.requests if r.method == "POST"}
    assert {"mpijobs", "networkpolicies"} <= posted
    assert api.call(lambda e: _stored(e, MPIJOBS, NAME)) is None
    assert api.call(lambda e: _stored(e, POLICIES, NAME)) is None


@pytest.mark.usefixtures("fast_poll")
def test_keep_leaves_the_run_on_the_cluster(
    capsys: pytest.CaptureFixture[str],
    repo: Path,
    kubeconfig: Path,
    api: RunningEmulator,
    operator: Any,
) -> None:
    operator("Succeeded", LOG_FILE.read_text())
    status, out, _ = _apply(capsys, repo, kubeconfig, "--keep")
    assert status == 0, out
    assert api.call(lambda e: _stored(e, MPIJOBS, NAME)) is not None
    assert "deleted" not in out


@pytest.mark.usefixtures("fast_poll")
def test_a_failed_run_fails_with_the_launchers_last_lines(
    capsys: pytest.CaptureFixture[str],
    repo: Path,
    kubeconfig: Path,
    api: RunningEmulator,
    operator: Any,
) -> None:
    operator("Failed", NCCL_FAILURE)
    status, out, _ = _apply(capsys, repo, kubeconfig)
    assert status == 1
    assert f"FAIL: the preflight Failed: MPIJob {NAMESPACE}/{NAME} failed." in out
    assert "  | Test NCCL failure common.cu:1005 'unhandled system error'" in out
    assert api.call(lambda e: _stored(e, MPIJOBS, NAME)) is None


@pytest.mark.usefixtures("fast_poll")
def test_a_run_without_verdict_times_out_and_is_cleaned_up(
    capsys: pytest.CaptureFixture[str], repo: Path, kubeconfig: Path, api: RunningEmulator
) -> None:
    status, out, _ = _apply(capsys, repo, kubeconfig, "--timeout", "0.3")
    assert status == 1
    assert "FAIL: the preflight TimedOut: no Succeeded or Failed condition within 0.3s" in out
    assert "(no launcher pod)" in out
    assert api.call(lambda e: _stored(e, MPIJOBS, NAME)) is None
    assert api.call(lambda e: _stored(e, POLICIES, NAME)) is None


def test_an_unreachable_cluster_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], repo: Path, tmp_path: Path
) -> None:
    dead = write_kubeconfig(tmp_path / "dead", "https://127.0.0.1:1")
    status, out, err = _apply(capsys, repo, dead, "--request-timeout", "2")
    assert status == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "cannot connect" in err, err


def test_a_preflight_already_there_is_refused_and_left_alone(
    capsys: pytest.CaptureFixture[str], repo: Path, kubeconfig: Path, api: RunningEmulator
) -> None:
    """A run someone else started (or a --keep one) is not replaced, nor deleted by us."""
    theirs = {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": NAME, "namespace": NAMESPACE, "creationTimestamp": CREATED},
        "spec": {"mpiReplicaSpecs": {}},
    }
    api.add(theirs)
    status, out, err = _apply(capsys, repo, kubeconfig)
    assert status == 2 and "deleted" not in out
    assert len(err.strip().splitlines()) == 1 and "already exists" in err, err
    assert f"kubectl delete mpijobs.kubeflow.org -n {NAMESPACE} {NAME}" in err
    assert api.call(lambda e: _stored(e, MPIJOBS, NAME)) is not None
