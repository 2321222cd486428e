"""`explain` names the first failure of a job, across all its pods, even once they are gone.

Realistic cluster states served by the API emulator: a DDP chain reaction (one rank
OOMKilled, its peers failing their next collective after it), pods deleted by the
Training Operator's `cleanPodPolicy: All` with the cause left in the operator's
`ExitedWithCode` events (kubeflow/training-operator pkg/controller.v1/common/pod.go),
a role without `pods/log`, Kueue and Volcano preemption, and a TrainJob's JobSet pods.
On main each of these named the wrong pod, lost the cause, or exited 2.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import kmock
import pytest

from tests.cluster.conftest import built, find, live, owned, pod, response, run_cli
from tests.cluster.test_explain import JOB, _explain, _job
from trainops.cluster.emulator import reply
from trainops.cluster.emulator_thread import RunningEmulator

# What a rank prints when its peer died mid all-reduce (torch 2.x ProcessGroupNCCL):
# torch.distributed.DistBackendError with NCCL's remote error.
PEER_LOST = "".join(
    line + "\n"
    for line in (
        "step 1200 loss 1.9342",
        "[rank0]: Traceback (most recent call last):",
        '[rank0]:   File "/app/trainer/train.py", line 281, in _step',
        "[rank0]:     loss.backward()",
        "[rank0]: torch.distributed.DistBackendError: NCCL error in:"
        " /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:2055, remote process exited"
        " or there was a network error, NCCL version 2.27.3",
        "[rank0]: ncclRemoteError: A call failed possibly due to a network error or a remote"
        " process exiting prematurely.",
    )
)


def _chain_reaction(api: RunningEmulator, repo: Path) -> None:
    """worker-1 OOMKilled at 08:42:14 and restarted; worker-0 and master-0 then die of
    NCCL errors (08:42:31, and master-0 in CrashLoopBackOff since)."""
    api.add(
        _job(repo, "restarting"),
        pod(JOB, "master", 0, response("pods", "crash-loop-after-peer")),
        pod(JOB, "worker", 0, response("pods", "error-exit")),
        pod(JOB, "worker", 1, response("pods", "oom-killed-restarted")),
        pod(JOB, "worker", 2, response("pods", "running")),
    )
    logs = {
        ("ml-vision", f"{JOB}-master-0", "pytorch", True): PEER_LOST,
        ("ml-vision", f"{JOB}-worker-0", "pytorch", False): PEER_LOST.replace("rank0", "rank1"),
        ("ml-vision", f"{JOB}-worker-1", "pytorch", True): "step 1200 loss 1.9342\n",
    }
    api.call(lambda e: e.logs.update(logs))


def test_ddp_chain_reaction_names_the_oom_killed_worker_first(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On main: `CrashLoopBackOff: container pytorch of pod resnet50-ddp-master-0 ...`."""
    _chain_reaction(api, repo)
    code, out, err = _explain(capsys, repo, kubeconfig)
    assert code == 1, err
    lines = out.splitlines()
    assert lines[0] == (
        "OOMKilled: container pytorch of pod resnet50-ddp-worker-1 ran out of memory (memory"
        " limit 64Gi), exit code 137; raise its memory or lower the batch size"
    )
    # The peers' failures follow, in the order they happened.
    then = [line for line in lines if line.startswith("  then: ")]
    assert then == [
        "  then: Error: container pytorch of pod resnet50-ddp-worker-0 exited with code 1",
        "  then: CrashLoopBackOff: container pytorch of pod resnet50-ddp-master-0 keeps exiting"
        " (restarts 3, last exit code 1 Error)",
    ]
    assert "Log of pod/resnet50-ddp-worker-1 container pytorch (previous run, last 1 lines):" in out


def test_an_own_error_ranks_before_the_peers_collective_errors_that_follow_it(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not the OOM special case: worker-0's KeyError, then master-0's NCCL error after it;
    master-0 sorts first by name and crashed more recently, worker-0 is the cause."""
    api.add(
        _job(repo, "restarting"),
        pod(JOB, "master", 0, response("pods", "crash-loop-after-peer")),
        pod(JOB, "worker", 0, response("pods", "error-exit")),
    )
    logs = {
        ("ml-vision", f"{JOB}-master-0", "pytorch", True): PEER_LOST,
        ("ml-vision", f"{JOB}-worker-0", "pytorch", False): "[rank1]: KeyError: 'lr'\n",
    }
    api.call(lambda e: e.logs.update(logs))
    code, out, _ = _explain(capsys, repo, kubeconfig)
    assert code == 1
    assert out.splitlines()[0] == (
        "Error: container pytorch of pod resnet50-ddp-worker-0 exited with code 1"
    )


def test_pods_deleted_by_clean_pod_policy_leave_the_cause_in_the_events(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On main: `Failed: PyTorchJob resnet50-ddp is failed because 1 Master replica(s)
    failed.` -- the master, not worker-1 whose SIGKILL started it."""
    api.add(_job(repo, "failed"), *response("incidents", "pods-gone"))
    code, out, err = _explain(capsys, repo, kubeconfig)
    assert code == 1, err
    lines = out.splitlines()
    assert lines[0] == (
        "Exited: pod resnet50-ddp-worker-1 exited with code 137 (SIGKILL: the kernel's OOM"
        " killer, or a kill after the grace period); the pods are gone"
        " (runPolicy.cleanPodPolicy: All): this is from the events"
    )
    assert "  then: Exited: pod resnet50-ddp-worker-0 exited with code 1" in lines
    assert "Killing  pod/resnet50-ddp-worker-1: Stopping container pytorch" in out
    assert not any(r.url.path.endswith("/log") for r in api.requests)  # no pod, no log


def test_without_pods_log_permission_the_diagnosis_stays(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On main: exit 2, `error: 403 Forbidden: not allowed to get pods/log ...`, no cause."""
    api.add(_job(repo, "failed"), pod(JOB, "master", 0, response("pods", "oom-killed")))
    forbidden = response("errors", "forbidden-get-pods-log")
    api.call(lambda e: e[kmock.subresource("log")] << (lambda: reply(403, forbidden)))
    code, out, err = _explain(capsys, repo, kubeconfig, "--format", "json")
    assert (code, err) == (1, "")
    answer = json.loads(out)
    assert answer["cause"].startswith("OOMKilled: container pytorch of pod resnet50-ddp-master-0")
    assert answer["log"] is None
    [unread] = answer["unread"]
    assert unread.startswith(
        "log of pod/resnet50-ddp-master-0 container pytorch: 403 Forbidden: not allowed to get"
        " pods/log in namespace ml-vision"
    )
    code, out, _ = _explain(capsys, repo, kubeconfig)
    assert "Could not read:\n  log of pod/resnet50-ddp-master-0 container pytorch: 403" in out


def _workload(status: str) -> dict[str, Any]:
    return owned("Workload", name=f"pytorchjob-{JOB}-3f6a2", job=JOB, ns="ml-vision",
                 status=response("schedulers", status))  # fmt: skip


def test_kueue_preemption_comes_first(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On main: `Queued: Kueue has not admitted Workload ...: Preempted to accommodate...`
    -- a preempted job read as one still waiting for quota."""
    api.add(_job(repo, "suspended"), _workload("workload-preempted"),
            *response("incidents", "kueue-preempted"))  # fmt: skip
    code, out, err = _explain(capsys, repo, kubeconfig)
    assert code == 1, err
    assert out.splitlines()[0] == (
        "Preempted: Kueue evicted Workload pytorchjob-resnet50-ddp-3f6a2 (InClusterQueue):"
        " Preempted to accommodate a workload (UID: 5b1c2d3e-0000-4000-8000-00000000beef,"
        " JobUID: 7a2d3e4f-0000-4000-8000-00000000cafe) due to prioritization in the"
        " ClusterQueue"
    )


def test_scheduler_preemption_of_a_pod_is_named(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    api.add(
        _job(repo, "restarting"),
        pod(JOB, "master", 0, response("pods", "crash-loop-after-peer")),
        pod(JOB, "worker", 3, response("pods", "preempted")),
    )
    code, out, _ = _explain(capsys, repo, kubeconfig)
    assert code == 1
    assert out.splitlines()[0] == (
        "Preempted: the scheduler preempted pod resnet50-ddp-worker-3 for a higher-priority pod"
    )


def test_volcano_reclaim_comes_before_the_gang_waiting_again(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On main: `Pending: Volcano PodGroup resnet50-ddp is Pending: ...`, no word of the
    reclaim that evicted the running job."""
    job = live(find(built(repo, "onprem-a100"), "PyTorchJob", JOB),
               response("pytorchjob-status", "restarting"))  # fmt: skip
    api.add(job, owned("PodGroup", name=JOB, job=JOB, ns="ml-vision",
                       status=response("schedulers", "podgroup-pending")),
            *response("incidents", "volcano-reclaimed"))  # fmt: skip
    code, out, _ = run_cli(
        capsys, "--root", str(repo), "explain", JOB, "--cluster", "onprem-a100",
        "--kubeconfig", str(kubeconfig), "--context", "trainops-test",
    )  # fmt: skip
    assert code == 1
    assert out.splitlines()[0] == (
        "Preempted: Volcano evicted pods of PodGroup resnet50-ddp (reclaim)"
    )


def test_pending_keeps_the_schedulers_event_count_and_last_time(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    api.add(
        _job(repo, "created"),
        pod(JOB, "master", 0, response("pods", "pending-unschedulable")),
        *response("events", ""),
    )
    code, out, _ = _explain(capsys, repo, kubeconfig)
    assert code == 1
    assert out.splitlines()[0].endswith(
        "(the nodeSelector of pod resnet50-ddp-master-0)"
        " (FailedScheduling x6, last 2026-11-23T08:05:06Z)"
    )


def test_trainjob_pods_are_counted(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On main: `Running: 0/0 pods running` -- TrainJob pods carry JobSet's labels
    (jobset.sigs.k8s.io/jobset-name), not the Training Operator's."""
    trainjob = next(m for m in built(repo, "onprem-h200") if m.kind == "TrainJob")
    name, ns = trainjob.name or "", trainjob.namespace or "default"
    api.add(live(trainjob.data, response("trainjob-status", "running")))
    for index in range(2):
        p = pod(name, "node", index, response("pods", "running"), ns=ns)
        p["metadata"]["name"] = f"{name}-node-0-{index}"
        p["metadata"]["labels"] = {
            "jobset.sigs.k8s.io/jobset-name": name,
            "jobset.sigs.k8s.io/replicatedjob-name": "node",
            "batch.kubernetes.io/job-name": f"{name}-node-0",
        }
        api.add(p)
    code, out, err = run_cli(
        capsys, "--root", str(repo), "explain", name, "--cluster", "onprem-h200",
        "--kubeconfig", str(kubeconfig), "--context", "trainops-test",
    )  # fmt: skip
    assert code == 0, err
    assert out.splitlines()[0] == "Running: 2/2 pods running"


def test_a_running_job_is_not_blamed_on_its_history(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Volcano reclaimed the job earlier (the event is still there); it was re-scheduled and
    runs (restartPolicy OnFailure keeps a PyTorchJob Running while containers restart in
    place), and now worker-0 crash-loops on a bug: that is the cause, not the reclaim."""
    job = live(find(built(repo, "onprem-a100"), "PyTorchJob", JOB),
               response("pytorchjob-status", "running"))  # fmt: skip
    api.add(
        job,
        owned("PodGroup", name=JOB, job=JOB, ns="ml-vision",
              status=response("schedulers", "podgroup-running")),
        pod(JOB, "master", 0, response("pods", "running")),
        pod(JOB, "worker", 0, response("pods", "crash-loop")),
        *response("incidents", "volcano-reclaimed"),
    )  # fmt: skip
    code, out, _ = run_cli(
        capsys, "--root", str(repo), "explain", JOB, "--cluster", "onprem-a100",
        "--kubeconfig", str(kubeconfig), "--context", "trainops-test",
    )  # fmt: skip
    assert code == 1
    assert out.splitlines()[0].startswith(
        "CrashLoopBackOff: container pytorch of pod resnet50-ddp-worker-0 keeps exiting"
    )
    assert "Evict  podgroup/resnet50-ddp: reclaim" in out  # still shown as evidence
