"""`trainops explain` against the API emulator (kmock on 127.0.0.1, not a real cluster).

Each test puts one recorded failure on the emulated cluster (the shapes in responses/)
and checks the one-line cause that comes first, the evidence after it, and the exit code.
pykube-ng's real requests: get the job, list its pods by label selector, list events,
read the failing container's log.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.conftest import built, find, live, owned, pod, response, run_cli
from trainops.cluster.emulator_thread import RunningEmulator

JOB = "resnet50-ddp"


def _job(repo: Path, status: str) -> dict[str, Any]:
    return live(find(built(repo), "PyTorchJob", JOB), response("pytorchjob-status", status))


def _explain(
    capsys: pytest.CaptureFixture[str], repo: Path, kubeconfig: Path, *extra: str
) -> tuple[int, str, str]:
    return run_cli(
        capsys, "--root", str(repo), "explain", JOB, "--cluster", "cloud-h100",
        "--kubeconfig", str(kubeconfig), *extra,
    )  # fmt: skip


def test_pending_pod_names_the_node_selector_no_node_has(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    api.add(
        _job(repo, "created"),
        pod(JOB, "master", 0, response("pods", "pending-unschedulable")),
        pod("other-job", "master", 0, response("pods", "oom-killed")),
        *response("events", ""),
    )
    code, out, err = _explain(capsys, repo, kubeconfig)
    assert code == 1, err
    first, *rest = out.splitlines()
    assert first == (
        "Pending: 0/12 nodes have nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3"
        " (the nodeSelector of pod resnet50-ddp-master-0)"
        " (FailedScheduling x6, last 2026-11-23T08:05:06Z)"
    )
    evidence = "\n".join(rest)
    assert "Created=True  PyTorchJobCreated: PyTorchJob resnet50-ddp is created." in evidence
    assert "resnet50-ddp-master-0  Pending; PodScheduled=False Unschedulable: 0/12" in evidence
    # Events of the job and its pods, not of another job in the namespace.
    assert "Warning  FailedScheduling  pod/resnet50-ddp-master-0" in evidence
    assert "(x6)" in evidence
    assert "SuccessfulCreatePod  pytorchjob/resnet50-ddp" in evidence
    assert "other-job" not in evidence  # its pod and events: the label selector left them out
    pod_lists = [r for r in api.requests if r.url.path == "/api/v1/namespaces/ml-vision/pods"]
    assert [r.params["labelSelector"] for r in pod_lists] == [
        "training.kubeflow.org/job-name=resnet50-ddp"
    ]


def test_pending_for_lack_of_gpus_quotes_the_scheduler(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    api.add(
        _job(repo, "created"), pod(JOB, "master", 0, response("pods", "pending-insufficient-gpu"))
    )
    code, out, err = _explain(capsys, repo, kubeconfig)
    assert code == 1, err
    assert out.splitlines()[0] == (
        "Pending: 0/12 nodes are available: 4 Insufficient nvidia.com/gpu, 8 node(s) didn't"
        " match Pod's node affinity/selector (pod resnet50-ddp-master-0)"
    )


def test_image_pull_backoff(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    api.add(_job(repo, "created"), pod(JOB, "worker", 0, response("pods", "image-pull-backoff")))
    code, out, err = _explain(capsys, repo, kubeconfig)
    assert code == 1, err
    first = out.splitlines()[0]
    assert first.startswith(
        "ImagePullBackOff: pod resnet50-ddp-worker-0 cannot pull image"
        " ghcr.io/example/trainer:v1.4.0:"
    )
    assert "not found" in first


def test_oom_killed_shows_the_memory_limit_and_the_log(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = "".join(f"step {i} loss 2.{i:02d}\n" for i in range(40))
    api.add(
        _job(repo, "failed"),
        pod(JOB, "master", 0, response("pods", "oom-killed"), memory="64Gi"),
        pod(JOB, "worker", 0, response("pods", "running")),
    )
    api.call(lambda e: e.logs.update({("ml-vision", f"{JOB}-master-0", "pytorch", False): log}))
    code, out, err = _explain(capsys, repo, kubeconfig, "--tail", "5")
    assert code == 1, err
    lines = out.splitlines()
    assert lines[0] == (
        "OOMKilled: container pytorch of pod resnet50-ddp-master-0 ran out of memory"
        " (memory limit 64Gi), exit code 137; raise its memory or lower the batch size"
    )
    assert (
        "Failed=True  PyTorchJobFailed: PyTorchJob resnet50-ddp is failed because 1 Master" in out
    )
    at = lines.index(
        "Log of pod/resnet50-ddp-master-0 container pytorch (current run, last 5 lines):"
    )
    assert lines[at + 1 :] == [f"  step {i} loss 2.{i:02d}" for i in range(35, 40)]
    log_reads = [r for r in api.requests if r.url.path.endswith("/log")]
    # One read of the container's log, with the kubelet's timestamps, large enough to rank the
    # failure and find a torchrun child's traceback; --tail only limits what is shown.
    assert [dict(r.params) for r in log_reads] == [
        {"container": "pytorch", "tailLines": "2000", "timestamps": "true"}
    ]


def test_crash_loop_reads_the_previous_run_log(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    api.add(_job(repo, "restarting"), pod(JOB, "worker", 0, response("pods", "crash-loop")))
    key = ("ml-vision", f"{JOB}-worker-0", "pytorch", True)
    api.call(lambda e: e.logs.update({key: "Traceback (most recent call last):\nKeyError: 'lr'\n"}))
    code, out, err = _explain(capsys, repo, kubeconfig)
    assert code == 1, err
    assert out.splitlines()[0] == (
        "CrashLoopBackOff: container pytorch of pod resnet50-ddp-worker-0 keeps exiting"
        " (restarts 5, last exit code 1 Error); it raised KeyError: 'lr'"
    )
    assert (
        "(previous run, the traceback it died of, 2 lines):\n"
        "  Traceback (most recent call last):\n  KeyError: 'lr'"
    ) in out


def test_evicted(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    api.add(_job(repo, "restarting"), pod(JOB, "worker", 1, response("pods", "evicted")))
    code, out, err = _explain(capsys, repo, kubeconfig)
    assert code == 1, err
    assert out.splitlines()[0].startswith(
        "Evicted: pod resnet50-ddp-worker-1: The node was low on resource: ephemeral-storage."
    )


def test_kueue_not_admitted(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    api.add(
        _job(repo, "created"),
        owned("Workload", name=f"pytorchjob-{JOB}-3f6a2", job=JOB, ns="ml-vision",
              status=response("schedulers", "workload-pending")),
    )  # fmt: skip
    code, out, err = _explain(capsys, repo, kubeconfig)
    assert code == 1, err
    assert out.splitlines()[0] == (
        "Queued: Kueue has not admitted Workload pytorchjob-resnet50-ddp-3f6a2: couldn't"
        " assign flavors to pod set master: insufficient unused quota for nvidia.com/gpu in"
        " flavor h100-80gb, 8 more needed"
    )


def test_volcano_podgroup_pending(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = live(
        find(built(repo, "onprem-a100"), "PyTorchJob", JOB),
        response("pytorchjob-status", "created"),
    )
    api.add(job, owned("PodGroup", name=JOB, job=JOB, ns="ml-vision",
                       status=response("schedulers", "podgroup-pending")))  # fmt: skip
    code, out, _ = run_cli(
        capsys, "--root", str(repo), "explain", JOB, "--cluster", "onprem-a100",
        "--kubeconfig", str(kubeconfig), "--context", "trainops-test",
    )  # fmt: skip
    assert code == 1
    assert out.splitlines()[0] == (
        "Pending: Volcano PodGroup resnet50-ddp is Pending: 4/4 tasks in gang unschedulable:"
        " pod group is not ready, 4 Pending, 4 minAvailable; Pending: 4 Unschedulable"
    )


def test_running_job_is_healthy_and_json_has_the_same_answer(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    api.add(
        _job(repo, "running"),
        pod(JOB, "master", 0, response("pods", "running")),
        pod(JOB, "worker", 0, response("pods", "running")),
    )
    code, out, err = _explain(capsys, repo, kubeconfig, "--format", "json")
    assert code == 0, err
    answer = json.loads(out)
    assert answer["cause"] == "Running: 2/2 pods running"
    assert answer["healthy"] is True
    assert [c["type"] for c in answer["conditions"]] == ["Created", "Running"]


def test_job_in_git_but_not_on_the_cluster(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _explain(capsys, repo, kubeconfig)
    assert code == 1, err
    assert out.splitlines()[0].startswith(
        "NotDeployed: PyTorchJob ml-vision/resnet50-ddp is in Git"
        " (base/resnet50-ddp/pytorchjob.yaml)"
    )


def test_unknown_job_is_a_usage_error(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(
        capsys, "--root", str(repo), "explain", "resnet-50", "--cluster", "cloud-h100",
        "--kubeconfig", str(kubeconfig),
    )  # fmt: skip
    assert (code, out) == (2, "")
    assert err.startswith("error: no training job 'resnet-50' for cluster cloud-h100:")
    assert "llm-finetune, resnet50-ddp" in err and len(err.splitlines()) == 1


def test_a_log_the_kubelet_no_longer_has_is_left_out(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The emulator answers the log request 400, as the kubelet does for a container whose
    log is gone: the cause still comes first, the log section is simply absent."""
    api.add(_job(repo, "failed"), pod(JOB, "master", 0, response("pods", "oom-killed")))
    code, out, err = _explain(capsys, repo, kubeconfig)
    assert code == 1, err
    assert out.startswith("OOMKilled: container pytorch of pod resnet50-ddp-master-0")
    assert "Log of" not in out
    assert any(r.url.path.endswith("/pods/resnet50-ddp-master-0/log") for r in api.requests)
