"""`trainops status` says why a job that has not finished is stuck, from its pods.

The PHASE column is the operator's condition, which does not see what the kubelet does to
the pods: a job stays `Created` while its container cannot be created, `Running` while a
pod's node stopped reporting. Pod states as the kubelet and the node lifecycle controller
write them (tests/cluster/responses/pods.yaml; kubernetes v1.31
pkg/kubelet/kuberuntime/kuberuntime_container.go `CreateContainerConfigError`,
pkg/controller/util/node/controller_utils.go MarkPodsNotReady). On main both rows had no
finding.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cluster.conftest import built, live, pod, response, run_cli
from tests.cluster.test_explain import JOB, _job
from trainops.cluster.emulator_thread import RunningEmulator


def _status(
    capsys: pytest.CaptureFixture[str], repo: Path, kubeconfig: Path
) -> dict[str, list[str]]:
    code, out, err = run_cli(
        capsys, "--root", str(repo), "status", "--cluster", "cloud-h100",
        "--kubeconfig", str(kubeconfig), "-o", "json",
    )  # fmt: skip
    assert (code, err) == (0, "")
    return {j["name"]: j for j in json.loads(out)["jobs"] if j["created"]}


def test_a_created_job_whose_container_cannot_be_created_says_why(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    api.add(
        _job(repo, "created"),
        pod(JOB, "master", 0, response("pods", "create-config-secret-missing")),
        pod(JOB, "worker", 0, response("pods", "create-config-secret-missing")),
    )
    row = _status(capsys, repo, kubeconfig)[JOB]
    assert row["phase"] == "Created"
    assert row["findings"] == [
        "CreateContainerConfigError: the kubelet cannot start container pytorch of pod"
        ' resnet50-ddp-master-0: secret "hf-token" not found; create Secret hf-token in the'
        " pod's namespace, or fix the name the job's env, envFrom or volumes use (and 1 more);"
        " trainops explain resnet50-ddp --cluster cloud-h100"
    ]


def test_a_running_job_with_a_pod_on_a_lost_node_says_so(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    worker = pod(JOB, "worker", 0, response("pods", "node-not-ready"))
    worker["spec"]["nodeName"] = "gpu-h100-2"
    api.add(_job(repo, "running"), pod(JOB, "master", 0, response("pods", "running")), worker)
    row = _status(capsys, repo, kubeconfig)[JOB]
    assert row["phase"] == "Running"
    [finding] = row["findings"]
    assert finding.startswith(
        "NodeNotReady: node gpu-h100-2 of pod resnet50-ddp-worker-0 is not ready"
    )


def test_a_recovered_restart_is_no_finding(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A container that crashed once and runs again, the job Running: nothing to say."""
    api.add(_job(repo, "running"), pod(JOB, "master", 0, response("pods", "crash-loop-running")))
    assert _status(capsys, repo, kubeconfig)[JOB]["findings"] == []


def test_a_trainjobs_jobset_pods_are_counted(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its pods carry the JobSet's label (jobset.sigs.k8s.io/jobset-name), not the Training
    Operator's: on main `status` counted 0 restarts and said nothing of the crash loop."""
    trainjob = next(m for m in built(repo, "onprem-h200") if m.kind == "TrainJob")
    name, ns = trainjob.name or "", trainjob.namespace or "default"
    looping = pod(name, "node", 0, response("pods", "crash-loop"), ns=ns)
    looping["metadata"]["name"] = f"{name}-node-0-0-x8k2p"
    looping["metadata"]["labels"] = {
        "jobset.sigs.k8s.io/jobset-name": name,
        "jobset.sigs.k8s.io/replicatedjob-name": "node",
        "batch.kubernetes.io/job-name": f"{name}-node-0",
    }
    api.add(live(trainjob.data, response("trainjob-status", "running")), looping)
    code, out, err = run_cli(
        capsys, "--root", str(repo), "status", "--cluster", "onprem-h200",
        "--kubeconfig", str(kubeconfig), "--context", "trainops-test", "-o", "json",
    )  # fmt: skip
    assert (code, err) == (0, "")
    [row] = [j for j in json.loads(out)["jobs"] if j["name"] == name and j["created"]]
    assert row["restarts"] == 5
    assert row["findings"][0].startswith(
        f"CrashLoopBackOff: container pytorch of pod {name}-node-0-0-x8k2p keeps exiting"
    )
