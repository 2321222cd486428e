"""`trainops status` against the API emulator (kmock on 127.0.0.1, not a real cluster).

pykube-ng makes real HTTP requests: discovery of the training kinds, lists of jobs, pods
(with a label selector), Kueue Workloads; nothing is patched.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.cluster.conftest import (
    CONTEXT,
    built,
    find,
    live,
    owned,
    pod,
    response,
    run_cli,
)
from trainops.cluster.emulator_thread import RunningEmulator


def _cluster_with_jobs(api: RunningEmulator, repo: Path) -> None:
    """resnet50-ddp running as Git builds it, llm-finetune with a changed image, a job
    Git does not know, and the pods and Workload of resnet50-ddp."""
    objects = built(repo)
    resnet = live(
        find(objects, "PyTorchJob", "resnet50-ddp"), response("pytorchjob-status", "running")
    )
    llm = live(find(objects, "PyTorchJob", "llm-finetune"), uid="llm-uid")
    for replica in llm["spec"]["pytorchReplicaSpecs"].values():
        replica["template"]["spec"]["containers"][0]["image"] = "ghcr.io/example/trainer:hotfix"
    stray = live(find(objects, "PyTorchJob", "resnet50-ddp"), uid="stray-uid")
    stray["metadata"]["name"] = "old-experiment"
    api.add(
        resnet,
        llm,
        stray,
        pod("resnet50-ddp", "master", 0, response("pods", "running")),
        pod("resnet50-ddp", "worker", 0, response("pods", "running")),
        pod("resnet50-ddp", "worker", 1, response("pods", "crash-loop")),
        owned(
            "Workload",
            name="pytorchjob-resnet50-ddp-3f6a2",
            job="resnet50-ddp",
            ns="ml-vision",
            status=response("schedulers", "workload-admitted"),
        ),
    )


def test_status_json_reports_every_job_of_cluster_and_git(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _cluster_with_jobs(api, repo)
    code, out, err = run_cli(
        capsys, "--root", str(repo), "status", "--cluster", "cloud-h100",
        "--kubeconfig", str(kubeconfig), "-o", "json",
    )  # fmt: skip
    assert code == 0, err
    report = json.loads(out)
    assert report["context"] == CONTEXT  # the profile's, not the kubeconfig's current-context
    jobs = {(j["namespace"], j["name"]): j for j in report["jobs"]}
    resnet = jobs[("ml-vision", "resnet50-ddp")]
    assert resnet["phase"] == "Running"
    assert resnet["replicas"] == {
        "Master": {"active": 1, "succeeded": 0, "failed": 0},
        "Worker": {"active": 3, "succeeded": 0, "failed": 0},
    }
    assert resnet["restarts"] == 1 + 1 + 5  # restartCount of the three pods
    assert resnet["gpus"] == 4
    assert resnet["queue"] == "kueue: Admitted"
    assert resnet["git"] == "in sync"  # despite server stamps, Kueue's suspend, Flux labels
    assert resnet["file"] == "base/resnet50-ddp/pytorchjob.yaml"
    assert jobs[("ai-training", "llm-finetune")]["git"] == "differs"
    assert jobs[("ai-training", "llm-finetune")]["phase"] == "Unknown"  # no status yet
    assert jobs[("ai-training", "llm-finetune")]["queue"] == "kueue: no Workload"
    assert jobs[("ml-vision", "old-experiment")]["git"] == "not in Git"
    # The pods were listed with the job-name label selector, once per namespace.
    pod_lists = [r for r in api.requests if r.url.path.endswith("/pods")]
    assert pod_lists and all(
        r.params.get("labelSelector") == "training.kubeflow.org/job-name" for r in pod_lists
    )


def test_status_prints_the_table_to_a_pipe_as_to_a_terminal(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """kubectl's habit (issue 34): what the command prints does not depend on where stdout
    goes; JSON only with `-o json` (here stdout is captured: not a terminal)."""
    _cluster_with_jobs(api, repo)
    code, out, err = run_cli(
        capsys, "--root", str(repo), "status", "--cluster", "cloud-h100",
        "--kubeconfig", str(kubeconfig),
    )  # fmt: skip
    assert code == 0, err
    assert out.splitlines()[0].split()[:4] == ["NAMESPACE", "NAME", "KIND", "PHASE"]
    code, as_yaml, err = run_cli(
        capsys, "--root", str(repo), "status", "--cluster", "cloud-h100",
        "--kubeconfig", str(kubeconfig), "-o", "yaml",
    )  # fmt: skip
    assert code == 0, err
    assert yaml.safe_load(as_yaml)["cluster"] == "cloud-h100"


def test_status_lists_git_jobs_missing_on_the_cluster(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(
        capsys, "--root", str(repo), "status", "--cluster", "cloud-h100",
        "--kubeconfig", str(kubeconfig), "--format", "table",
    )  # fmt: skip
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split()[:4] == ["NAMESPACE", "NAME", "KIND", "PHASE"]
    rows = {tuple(line.split()[:2]): line for line in lines[1:]}
    assert set(rows) == {
        ("ai-training", "llm-finetune"),
        ("ml-vision", "resnet50-ddp"),
        ("ml-vision", "tensorflow-distributed"),
        ("ai-training", "tf-distributed"),
        ("ai-training", "horovod-training"),  # the MPI Operator's v2beta1 MPIJob
    }
    assert all(line.rstrip().endswith("missing") for line in rows.values())
    assert rows[("ai-training", "horovod-training")].split()[2] == "MPIJob"
    assert " 16 " in rows[("ai-training", "llm-finetune")]  # 2 pods x 8 GPUs


def test_status_table_shows_phase_replicas_queue_and_age(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _cluster_with_jobs(api, repo)
    code, out, _ = run_cli(
        capsys, "--root", str(repo), "status", "--cluster", "cloud-h100",
        "--kubeconfig", str(kubeconfig), "--format", "table",
    )  # fmt: skip
    assert code == 0
    row = next(line for line in out.splitlines() if " resnet50-ddp " in line)
    assert "Running" in row and "Master=1/0/0 Worker=3/0/0" in row
    assert "kueue: Admitted" in row and row.rstrip().endswith("in sync")


def test_status_on_a_volcano_cluster_shows_the_podgroup_phase(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    objects = built(repo, "onprem-a100")
    job = live(
        find(objects, "PyTorchJob", "resnet50-ddp"), response("pytorchjob-status", "running")
    )
    api.add(
        job,
        owned("PodGroup", name="resnet50-ddp", job="resnet50-ddp", ns="ml-vision",
              status=response("schedulers", "podgroup-running")),
    )  # fmt: skip
    code, out, err = run_cli(
        capsys, "--root", str(repo), "status", "--cluster", "onprem-a100",
        "--kubeconfig", str(kubeconfig), "--context", CONTEXT,
        "-o", "json",
    )  # fmt: skip
    assert code == 0, err
    jobs = {j["name"]: j for j in json.loads(out)["jobs"]}
    assert jobs["resnet50-ddp"]["queue"] == "volcano: Running"
    assert jobs["resnet50-ddp"]["git"] == "in sync"
    assert jobs["llm-finetune"]["git"] == "missing"


def test_status_shows_trainjobs_too(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Trainer v2's TrainJob, where the cluster serves it (its CRD is in the emulator's
    discovery, from ../shared/upstream): phase from its JobSet's child Jobs, GPUs from
    numNodes x resourcesPerNode."""
    trainjob = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "llama-sft", "namespace": "ai-training", "uid": "tj-uid",
                     "creationTimestamp": "2026-11-23T08:00:00Z"},
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {"numNodes": 2, "resourcesPerNode": {"limits": {"nvidia.com/gpu": "8"}}},
        },
        "status": response("trainjob-status", "running"),
    }  # fmt: skip
    api.add(trainjob)
    code, out, err = run_cli(
        capsys, "--root", str(repo), "status", "--cluster", "cloud-h100",
        "--kubeconfig", str(kubeconfig),
        "-o", "json",
    )  # fmt: skip
    assert code == 0, err
    row = next(j for j in json.loads(out)["jobs"] if j["name"] == "llama-sft")
    assert (row["kind"], row["phase"], row["gpus"], row["git"]) == (
        "TrainJob", "Running", 16, "not in Git"
    )  # fmt: skip
    assert row["replicas"] == {"node": {"active": 2, "succeeded": 0, "failed": 0}}
