"""`explain` on what Kueue, Volcano and the MPI Operator write when a job does not run.

Recorded shapes (tests/cluster/responses/schedulers.yaml, mpijob-status.yaml): Kueue
v0.19.2's Workload evicted by the PodsReady timeout and then deactivated
(pkg/controller/core/workload_controller.go), waiting for an admission check once quota is
reserved (`status.admissionChecks`); a Volcano PodGroup whose phase is `Unknown` (volcano
pkg/scheduler/framework/session.go jobStatus: some tasks run, the rest of the gang is
unschedulable); an MPI Operator v0.8.0 MPIJob whose launcher failed while its workers run
(pkg/controller/mpi_job_controller.go updateMPIJobFailedStatus), its launcher's log tagged
by `mpirun --tag-output` (`[1,0]<stderr>:`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cluster.conftest import built, find, live, owned, pod, response, run_cli
from tests.cluster.test_explain import JOB, _explain, _job
from trainops.cluster.emulator_thread import RunningEmulator

WORKLOAD = f"pytorchjob-{JOB}-3f6a2"


# The Workload's recorded state -> (the job's status, the first line explain must print).
KUEUE: dict[str, tuple[str, str]] = {
    "workload-podsready-timeout": (
        "suspended",
        f"Evicted: Kueue evicted Workload {WORKLOAD} (PodsReadyTimeout): Exceeded the"
        f" PodsReady timeout ml-vision/{WORKLOAD}; its pods were not all ready within"
        " Kueue's waitForPodsReady timeout (look at the pods: unschedulable, an image still"
        " pulling, a crash loop); Kueue requeues it after a back-off",
    ),
    "workload-deactivated": (
        "suspended",
        f"Evicted: Kueue evicted Workload {WORKLOAD} (Deactivated): The workload is"
        " deactivated due to exceeding the maximum number of re-queuing retries; Kueue set"
        " it inactive (spec.active: false) and will not queue it again until it is set"
        " active",
    ),
    "workload-admission-check-pending": (
        "created",
        f"Queued: Kueue has not admitted Workload {WORKLOAD}: quota is reserved in"
        " ClusterQueue team-training-cq, but admission check dws-prov is Pending: Waiting"
        " for resources. Currently there are not enough resources available to fulfill the"
        " request.",
    ),
}


@pytest.mark.parametrize("state", sorted(KUEUE))
def test_kueue_says_why_it_holds_the_job(
    state: str,
    api: RunningEmulator,
    repo: Path,
    kubeconfig: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """On main: the eviction without what it means, and `Queued: ...: Quota reserved in
    ClusterQueue team-training-cq` for a Workload whose quota is reserved."""
    workload = owned(
        "Workload", name=WORKLOAD, job=JOB, ns="ml-vision", status=response("schedulers", state)
    )
    job_state, first = KUEUE[state]
    api.add(_job(repo, job_state), workload)
    code, out, _ = _explain(capsys, repo, kubeconfig)
    assert code == 1
    assert out.splitlines()[0] == first


def test_a_volcano_gang_half_running_says_so(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On main: `Pending: Volcano PodGroup resnet50-ddp is Unknown: ...`, no word of the two
    pods that run."""
    job = live(find(built(repo, "onprem-a100"), "PyTorchJob", JOB),
               response("pytorchjob-status", "running"))  # fmt: skip
    api.add(
        job,
        owned("PodGroup", name=JOB, job=JOB, ns="ml-vision",
              status=response("schedulers", "podgroup-unknown")),
        pod(JOB, "master", 0, response("pods", "running")),
        pod(JOB, "worker", 0, response("pods", "running")),
    )  # fmt: skip
    code, out, _ = run_cli(
        capsys, "--root", str(repo), "explain", JOB, "--cluster", "onprem-a100",
        "--kubeconfig", str(kubeconfig), "--context", "trainops-test",
    )  # fmt: skip
    assert code == 1
    assert out.splitlines()[0] == (
        "Pending: Volcano PodGroup resnet50-ddp is Unknown: 2 of its pods run but the rest of"
        " the gang cannot be scheduled: 2/4 tasks in gang unschedulable: pod group is not"
        " ready, 2 Running, 2 Pending, 4 minAvailable; Pending: 2 Unschedulable"
    )


# What `mpirun --tag-output` (Open MPI 4.1) prints when rank 0 dies of an exception.
MPIRUN_LOG = "".join(
    line + "\n"
    for line in (
        "[1,0]<stdout>:epoch 0 step 100 loss 2.31",
        "[1,0]<stderr>:Traceback (most recent call last):",
        '[1,0]<stderr>:  File "/app/train.py", line 41, in <module>',
        "[1,0]<stderr>:    opt = hvd.DistributedOptimizer(make_optimizer(cfg))",
        '[1,0]<stderr>:  File "/app/train.py", line 12, in make_optimizer',
        '[1,0]<stderr>:    return torch.optim.SGD(params, lr=cfg["lr"])',
        "[1,0]<stderr>:KeyError: 'lr'",
        "-" * 74,
        "Primary job  terminated normally, but 1 process returned",
        "a non-zero exit code. Per user-direction, the job has been aborted.",
        "-" * 74,
        "-" * 74,
        "mpirun detected that one or more processes exited with non-zero status, thus causing",
        "the job to be terminated. The first process to do so was:",
        "",
        "  Process name: [[5029,1],0]",
        "  Exit code:    1",
        "-" * 74,
    )
)


def test_an_mpijob_whose_launcher_failed_names_the_ranks_exception(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On main: `...; it raised [1,0]<stderr>:Traceback (most recent call last):` and a
    two-line log: the rank prefix of mpirun's tagged output was not read as one."""
    name = "horovod-training"
    launcher = pod(name, "launcher", 0, response("pods", "error-exit"), ns="ai-training")
    launcher["metadata"]["name"] = f"{name}-launcher-x7k2p"
    launcher["metadata"]["labels"] = {  # the MPI Operator's, and the batch Job's
        "training.kubeflow.org/job-name": name,
        "training.kubeflow.org/job-role": "launcher",
        "training.kubeflow.org/operator-name": "mpi-operator",
        "batch.kubernetes.io/job-name": f"{name}-launcher",
    }
    launcher["spec"]["containers"][0]["name"] = "mpi-launcher"
    launcher["status"]["containerStatuses"][0]["name"] = "mpi-launcher"
    workers = [pod(name, "worker", i, response("pods", "running"), ns="ai-training")
               for i in range(2)]  # fmt: skip
    job = live(find(built(repo), "MPIJob", name), response("mpijob-status", "launcher-failed"))
    api.add(job, launcher, *workers)
    logs = {("ai-training", f"{name}-launcher-x7k2p", "mpi-launcher", False): MPIRUN_LOG}
    api.call(lambda e: e.logs.update(logs))
    code, out, _ = run_cli(
        capsys, "--root", str(repo), "explain", name, "--cluster", "cloud-h100",
        "--kubeconfig", str(kubeconfig),
    )  # fmt: skip
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == (
        "Error: container mpi-launcher of pod horovod-training-launcher-x7k2p exited with code"
        " 1; it raised KeyError: 'lr'"
    )
    assert (
        "Log of pod/horovod-training-launcher-x7k2p container mpi-launcher (current run, the"
        " traceback it died of, 6 lines):" in lines
    )


def test_volcanos_fit_errors_are_read_like_the_schedulers(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On main: `Pending: 0/8 nodes are unavailable: 8 Insufficient nvidia.com/gpu.`, the
    pod unnamed (only kube-scheduler's "are available" was read)."""
    job = live(find(built(repo, "onprem-a100"), "PyTorchJob", JOB),
               response("pytorchjob-status", "created"))  # fmt: skip
    waiting = pod(JOB, "master", 0, response("pods", "pending-volcano-unschedulable"))
    waiting["spec"]["schedulerName"] = "volcano"
    inqueue = {"phase": "Inqueue"}
    api.add(job, owned("PodGroup", name=JOB, job=JOB, ns="ml-vision", status=inqueue), waiting)
    code, out, _ = run_cli(
        capsys, "--root", str(repo), "explain", JOB, "--cluster", "onprem-a100",
        "--kubeconfig", str(kubeconfig), "--context", "trainops-test",
    )  # fmt: skip
    assert code == 1
    assert out.splitlines()[0] == (
        "Pending: 0/8 nodes are unavailable: 8 Insufficient nvidia.com/gpu"
        " (pod resnet50-ddp-master-0)"
    )
