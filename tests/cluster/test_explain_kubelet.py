"""`explain` names what the kubelet and the control plane did to a pod, in their words and ours.

Pod states as the kubelet writes them (tests/cluster/responses/pods.yaml, checked against the
Kubernetes PodStatus schema; sources, kubernetes v1.31): `CreateContainerConfigError` for a
missing Secret or key (pkg/kubelet/kuberuntime/kuberuntime_container.go, the messages of
pkg/kubelet/kubelet_pods.go makeEnvironmentVariables), containerd's `StartError` (exit 128),
an init container restarted in place, `ContainerStatusUnknown` (pkg/kubelet/kubelet_pods.go),
exits by signal (139), the pod-level reasons `DeadlineExceeded` (pkg/kubelet/active_deadline.go),
`UnexpectedAdmissionError` and `OutOf<resource>` (pkg/kubelet/lifecycle/predicate.go),
`Terminated` (pkg/kubelet/nodeshutdown), a node that stopped reporting
(pkg/controller/util/node/controller_utils.go MarkPodsNotReady) and a pod stuck Terminating
there; the volume events of a pod that cannot start (pkg/kubelet/volumemanager, the
attach/detach controller) and the Training Operator's `FailedCreatePod` (kubeflow/training-
operator v1.9.0 pkg/controller.v1/control/pod_control.go). Before this file, each of these
was `Created: PyTorchJob resnet50-ddp is created.`, `Restarting: ...`, a bare exit code, or
(the node not ready) `Running: 2/2 pods running` with exit 0.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.cluster.conftest import pod, response
from tests.cluster.test_explain import JOB, _explain, _job
from trainops.cluster.emulator_thread import RunningEmulator

# (job status, pod state, replica, the first line explain must print)
CASES: dict[str, tuple[str, str, str, str]] = {
    "secret-missing": (
        "created",
        "create-config-secret-missing",
        "master",
        "CreateContainerConfigError: the kubelet cannot start container pytorch of pod"
        ' resnet50-ddp-master-0: secret "hf-token" not found; create Secret hf-token in the'
        " pod's namespace, or fix the name the job's env, envFrom or volumes use",
    ),
    "secret-key-missing": (
        "created",
        "create-config-key-missing",
        "master",
        "CreateContainerConfigError: the kubelet cannot start container pytorch of pod"
        " resnet50-ddp-master-0: couldn't find key HF_TOKEN in Secret ml-vision/hf-token; add"
        " key HF_TOKEN to Secret hf-token, or fix the key the job's env names",
    ),
    "start-error": (
        "restarting",
        "start-error-crash-loop",
        "master",
        "CrashLoopBackOff: container pytorch of pod resnet50-ddp-master-0 keeps exiting"
        " (restarts 3, last exit code 128 StartError): failed to create containerd task:"
        " failed to create shim task: OCI runtime create failed: runc create failed: unable"
        ' to start container process: exec: "torchrun": executable file not found in $PATH:'
        " unknown",
    ),
    "init-crash-loop": (
        "created",
        "init-crash-loop",
        "master",
        "CrashLoopBackOff: init container fetch-data of pod resnet50-ddp-master-0 keeps"
        " exiting (restarts 3, last exit code 1 Error)",
    ),
    "init-oom-killed": (
        "created",
        "init-oom-killed",
        "master",
        "OOMKilled: init container fetch-data of pod resnet50-ddp-master-0 ran out of memory,"
        " exit code 137; raise its memory limit",
    ),
    "evicted-memory": (
        "restarting",
        "evicted-memory",
        "worker",
        "Evicted: pod resnet50-ddp-worker-0: The node was low on resource: memory. Threshold"
        " quantity: 100Mi, available: 71Mi. Container pytorch was using 61Gi, request is 8Gi,"
        " has larger consumption of memory. (node memory pressure: the kubelet evicts first"
        " the pods that use more memory than they request; request as much memory as the"
        " limit)",
    ),
    "image-unauthorized": (
        "created",
        "err-image-pull-unauthorized",
        "master",
        "ErrImagePull: pod resnet50-ddp-master-0 cannot pull image"
        ' ghcr.io/example/trainer:v1.4.0: failed to pull and unpack image "ghcr.io/example/'
        'trainer:v1.4.0": failed to resolve reference "ghcr.io/example/trainer:v1.4.0": failed'
        " to authorize: failed to fetch anonymous token: unexpected status from GET request to"
        " https://ghcr.io/token?scope=repository%3Aexample%2Ftrainer%3Apull&service=ghcr.io:"
        " 401 Unauthorized; the registry refused the credentials: add or fix the pod's"
        " imagePullSecrets",
    ),
    "container-status-unknown": (
        "failed",
        "container-status-unknown",
        "master",
        "ContainerStatusUnknown: the kubelet lost container pytorch of pod"
        " resnet50-ddp-master-0 (The container could not be located when the pod was"
        " terminated): its node restarted or was unreachable when the pod was deleted; the"
        " exit code 137 is the kubelet's, not the program's",
    ),
    "segfault": (
        "failed",
        "segfault-exit",
        "master",
        "Error: container pytorch of pod resnet50-ddp-master-0 exited with code 139 (SIGSEGV:"
        " a segmentation fault in native code: a CUDA, NCCL or extension library, or a"
        " DataLoader worker; run with PYTHONFAULTHANDLER=1 to see where)",
    ),
    "deadline-exceeded": (
        "failed",
        "deadline-exceeded",
        "master",
        "DeadlineExceeded: pod resnet50-ddp-master-0: Pod was active on the node longer than"
        " the specified deadline (the pod ran longer than its activeDeadlineSeconds)",
    ),
    "gpu-admission": (
        "restarting",
        "unexpected-admission-gpu",
        "worker",
        "UnexpectedAdmissionError: pod resnet50-ddp-worker-0: Allocate failed due to requested"
        " number of devices unavailable for nvidia.com/gpu. Requested: 8, Available: 7, which"
        " is unexpected (the kubelet refused the pod after the scheduler placed it: the node's"
        " device plugin could not allocate the devices: GPUs unhealthy, or fewer than it"
        " advertises; check the node's allocatable and the device plugin's log)",
    ),
    "out-of-gpu": (
        "restarting",
        "out-of-gpu",
        "worker",
        "OutOfnvidia.com/gpu: pod resnet50-ddp-worker-0: Pod was rejected: Node didn't have"
        " enough resource: nvidia.com/gpu, requested: 8, used: 0, capacity: 7 (the kubelet"
        " refused the pod: the node has fewer nvidia.com/gpu than the scheduler counted: a"
        " device plugin restarted, or devices failed)",
    ),
    "node-shutdown": (
        "restarting",
        "node-shutdown",
        "worker",
        "Terminated: pod resnet50-ddp-worker-0: Pod was terminated in response to imminent"
        " node shutdown. (its node was shut down)",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_kubelets_reason_is_the_first_line(
    case: str,
    api: RunningEmulator,
    repo: Path,
    kubeconfig: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Each alone, or beside a healthy master: the kubelet's reason and what to do."""
    job_state, pod_state, replica, first = CASES[case]
    pods = [pod(JOB, replica, 0, response("pods", pod_state))]
    if replica != "master":
        pods.append(pod(JOB, "master", 0, response("pods", "running")))
    api.add(_job(repo, job_state), *pods)
    code, out, err = _explain(capsys, repo, kubeconfig)
    assert (code, err) == (1, "")
    assert out.splitlines()[0] == first


def test_the_sigterm_of_a_pod_the_kubelet_ended_is_not_a_second_cause(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The deadline's SIGTERM (exit 143) follows from it: no `then: Error ... 143`."""
    api.add(_job(repo, "failed"), pod(JOB, "master", 0, response("pods", "deadline-exceeded")))
    _, out, _ = _explain(capsys, repo, kubeconfig)
    assert out.startswith("DeadlineExceeded: pod resnet50-ddp-master-0: ")
    assert "then:" not in out


def _on_node(p: dict[str, Any], node: str, deleting: str | None = None) -> dict[str, Any]:
    p["spec"]["nodeName"] = node
    if deleting:
        p["metadata"]["deletionTimestamp"] = deleting
        p["metadata"]["deletionGracePeriodSeconds"] = 30
    return p


def test_a_running_job_on_a_node_that_stopped_reporting_is_not_healthy(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The job is still Running (the operator sees a Running pod); on main: `Running: 2/2
    pods running`, exit 0."""
    worker = _on_node(pod(JOB, "worker", 0, response("pods", "node-not-ready")), "gpu-h100-2")
    api.add(_job(repo, "running"), pod(JOB, "master", 0, response("pods", "running")), worker)
    code, out, _ = _explain(capsys, repo, kubeconfig)
    assert code == 1
    assert out.splitlines()[0] == (
        "NodeNotReady: node gpu-h100-2 of pod resnet50-ddp-worker-0 is not ready (its kubelet"
        " stopped reporting): the pod's containers are in an unknown state and it is deleted"
        " once its not-ready toleration ends (300 s by default); check the node (kubectl"
        " describe node)"
    )


def test_a_pod_stuck_terminating_on_a_lost_node_says_how_to_let_go(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The Training Operator waits for the pod to go before it creates it again."""
    worker = _on_node(
        pod(JOB, "worker", 0, response("pods", "terminating-on-lost-node")),
        "gpu-h100-2",
        deleting="2026-11-23T08:56:41Z",
    )
    api.add(_job(repo, "restarting"), pod(JOB, "master", 0, response("pods", "running")), worker)
    code, out, _ = _explain(capsys, repo, kubeconfig)
    assert code == 1
    assert out.splitlines()[0] == (
        "NodeLost: pod resnet50-ddp-worker-0 was deleted because its node gpu-h100-2 became"
        " not-ready or unreachable; it has been Terminating since 2026-11-23T08:56:41Z (its"
        " node cannot confirm the deletion; once the node is gone for good: kubectl delete pod"
        " resnet50-ddp-worker-0 --force --grace-period=0)"
    )


def test_a_pod_that_cannot_mount_its_volume_names_the_volume_event(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its container only says ContainerCreating; on main: `Created: PyTorchJob
    resnet50-ddp is created.`. The latest of each volume event is told, Multi-Attach first
    (it came first, and it is why the mount times out)."""
    api.add(
        _job(repo, "created"),
        pod(JOB, "worker", 0, response("pods", "running")),
        pod(JOB, "worker", 1, response("pods", "pending-recreated")),
        *response("incidents", "volume-cannot-mount"),
    )
    code, out, _ = _explain(capsys, repo, kubeconfig)
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == (
        "FailedAttachVolume: pod resnet50-ddp-worker-1 cannot start: Multi-Attach error for"
        ' volume "pvc-2b8c5e4f-0000-4000-8000-00000000d00d" Volume is already used by pod(s)'
        " resnet50-ddp-worker-0 (a ReadWriteOnce volume is attached to another node's pod: a"
        " volume every pod of the job mounts needs ReadWriteMany) (FailedAttachVolume x1,"
        " last 2026-11-23T08:00:09Z)"
    )
    assert any(
        line.startswith("  then: FailedMount: pod resnet50-ddp-worker-1 cannot start: Unable")
        and line.endswith("(FailedMount x9, last 2026-11-23T08:20:40Z)")
        for line in lines
    )


def test_pods_the_operator_cannot_create_name_the_admission_that_refused_them(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No pod exists; on main: `Created: PyTorchJob resnet50-ddp is created.`"""
    api.add(_job(repo, "created"), *response("incidents", "pods-refused"))
    code, out, _ = _explain(capsys, repo, kubeconfig)
    assert code == 1
    assert out.splitlines()[0] == (
        'FailedCreate: pytorchjob/resnet50-ddp cannot create its pods: Error creating: pods "'
        'resnet50-ddp-master-0" is forbidden: exceeded quota: gpu-quota, requested:'
        " requests.nvidia.com/gpu=8, used: requests.nvidia.com/gpu=24, limited:"
        " requests.nvidia.com/gpu=32; the namespace's ResourceQuota is used up: wait for other"
        " jobs, or raise the quota"
    )


def test_a_gated_pod_names_its_gates_and_who_lifts_them(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On main: `Pending: Scheduling is blocked due to non-empty scheduling gates`."""
    gated = pod(JOB, "master", 0, response("pods", "scheduling-gated"))
    gated["spec"]["schedulingGates"] = [{"name": "kueue.x-k8s.io/topology"}]
    api.add(_job(repo, "created"), gated)
    code, out, _ = _explain(capsys, repo, kubeconfig)
    assert code == 1
    assert out.splitlines()[0] == (
        "Pending: pod resnet50-ddp-master-0 waits on its scheduling gates"
        " kueue.x-k8s.io/topology: the scheduler does not try it until Kueue removes them"
    )


def test_an_exit_the_operator_recorded_says_what_its_code_means(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The pods are gone (cleanPodPolicy); the Training Operator's `ExitedWithCode` event
    (pkg/controller.v1/common/pod.go, v1.9.0) keeps the code: 139 is a segfault. On main:
    `Exited: pod resnet50-ddp-worker-1 exited with code 139; the pods are gone ...`."""
    events = response("incidents", "pods-gone")
    exited = next(e for e in events if e["reason"] == "ExitedWithCode")
    exited["message"] = "Pod: ml-vision.resnet50-ddp-worker-1 exited with code 139"
    api.add(_job(repo, "failed"), exited)
    code, out, _ = _explain(capsys, repo, kubeconfig)
    assert code == 1
    assert out.splitlines()[0].startswith(
        "Exited: pod resnet50-ddp-worker-1 exited with code 139 (SIGSEGV: a segmentation fault"
    )


def test_an_unbound_claim_is_named(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On main the scheduler's words alone: which of the pod's claims, and why, unsaid."""
    waiting = pod(JOB, "master", 0, response("pods", "pending-pvc-unbound"))
    waiting["spec"]["volumes"] = [
        {"name": "dshm", "emptyDir": {"medium": "Memory"}},
        {"name": "checkpoints", "persistentVolumeClaim": {"claimName": "resnet50-ddp-checkpoints"}},
    ]
    api.add(_job(repo, "created"), waiting)
    code, out, _ = _explain(capsys, repo, kubeconfig)
    assert code == 1
    assert out.splitlines()[0] == (
        "Pending: 0/12 nodes are available: pod has unbound immediate PersistentVolumeClaims"
        " (pod resnet50-ddp-master-0); a claim it mounts (resnet50-ddp-checkpoints) is not"
        " bound: its StorageClass could not provision a volume (kubectl describe pvc)"
    )


def test_a_pod_still_creating_its_container_is_named(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No event left (the event TTL) to say why: on main only `Created: PyTorchJob
    resnet50-ddp is created.`"""
    api.add(_job(repo, "created"), pod(JOB, "master", 0, response("pods", "pending-recreated")))
    code, out, _ = _explain(capsys, repo, kubeconfig)
    assert code == 1
    assert out.splitlines()[0] == (
        "Created: PyTorchJob resnet50-ddp is created; pod resnet50-ddp-master-0 is still"
        " ContainerCreating since 2026-11-23T08:31:06Z: its node pulls the image or mounts its"
        " volumes (kubectl describe pod resnet50-ddp-master-0)"
    )
