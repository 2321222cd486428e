"""`explain` and `status` when the job's own conditions are all there is to say.

Recorded shapes (tests/cluster/responses/pytorchjob-status.yaml, trainjob-status.yaml):
kubeflow/training-operator v1.9.0 fails a job past `runPolicy.activeDeadlineSeconds`
(pkg/controller.v1/common/job.go: "Job %s has failed because it was active longer than
specified deadline") and deletes its pods; it marks a job Succeeded when its master did, a
failed worker notwithstanding (pkg/controller.v1/pytorch/pytorchjob_controller.go
UpdateJobStatus); Kubeflow Trainer v2 writes a TrainJob created suspended (Kueue's webhook
sets `spec.suspend`) as `Suspended` and `Created` in the same second
(pkg/controller/trainjob_controller.go).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cluster.conftest import built, live, pod, response, run_cli
from tests.cluster.test_explain import JOB, _explain, _job
from trainops.cluster.emulator_thread import RunningEmulator


def test_a_job_past_its_deadline_names_the_limit_and_its_value(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = _job(repo, "deadline-exceeded")
    job["spec"]["runPolicy"]["activeDeadlineSeconds"] = 3600
    api.add(job)
    code, out, _ = _explain(capsys, repo, kubeconfig)
    assert code == 1
    assert out.splitlines()[0] == (
        "Failed: Job resnet50-ddp has failed because it was active longer than specified"
        " deadline (runPolicy.activeDeadlineSeconds: 3600)"
    )


def test_a_job_that_succeeded_past_a_failed_worker_says_so(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 0 (the job did succeed); on main nothing said that worker-1 had failed."""
    done = {
        "phase": "Succeeded",
        "startTime": "2026-11-23T08:00:07Z",
        "containerStatuses": [
            {
                "name": "pytorch",
                "image": "ghcr.io/example/trainer:v1.4.0",
                "imageID": "",
                "ready": False,
                "restartCount": 0,
                "state": {"terminated": {"exitCode": 0, "reason": "Completed"}},
                "lastState": {},
            }
        ],
    }
    api.add(
        _job(repo, "succeeded-worker-failed"),
        pod(JOB, "master", 0, done),
        pod(JOB, "worker", 1, response("pods", "error-exit")),
    )
    code, out, _ = _explain(capsys, repo, kubeconfig, "--format", "json")
    answer = json.loads(out)
    assert (code, answer["healthy"]) == (0, True)
    assert answer["cause"] == "Succeeded: PyTorchJob resnet50-ddp is successfully completed."
    assert answer["findings"] == [
        "failed before the job finished: Error: container pytorch of pod resnet50-ddp-worker-1"
        " exited with code 1"
    ]


def test_a_trainjob_created_suspended_reads_suspended(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On main: phase `Created` in `status` and `Created: Succeeded to create Jobs` in
    `explain`, the later of two conditions of the same second."""
    trainjob = next(m for m in built(repo, "onprem-h200") if m.kind == "TrainJob")
    api.add(live(trainjob.data, response("trainjob-status", "suspended")))
    where = ("--cluster", "onprem-h200", "--kubeconfig", str(kubeconfig),
             "--context", "trainops-test")  # fmt: skip
    code, out, _ = run_cli(capsys, "--root", str(repo), "explain", trainjob.name or "", *where)
    assert code == 1
    assert out.splitlines()[0] == (
        "Suspended: TrainJob is suspended; its suspend field is true and the operator deleted"
        " its pods: Kueue resumes it when it admits its Workload, else set the field to false"
    )
    code, out, _ = run_cli(capsys, "--root", str(repo), "status", *where, "-o", "json")
    [row] = [j for j in json.loads(out)["jobs"] if j["name"] == trainjob.name]
    assert row["phase"] == "Suspended"


def test_a_job_no_operator_took_up_says_so(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Applied by Flux, no status, no pods: the operator is down or does not serve the kind.
    On main: `Unknown: no pod has started yet`."""
    manifests = built(repo)
    mpijob = next(m for m in manifests if m.kind == "MPIJob")
    api.add(live(mpijob.data))
    code, out, _ = run_cli(
        capsys, "--root", str(repo), "explain", mpijob.name or "", "--cluster", "cloud-h100",
        "--kubeconfig", str(kubeconfig),
    )  # fmt: skip
    assert code == 1
    assert out.splitlines()[0] == (
        "NotReconciled: the MPIJob has no status and no pods: the MPI Operator has not taken"
        " it up; is its controller running, and does it serve MPIJob (the Training"
        " Operator's --enable-scheme)? `trainops doctor` checks both"
    )
