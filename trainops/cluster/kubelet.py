"""What the kubelet's and the control plane's words about a pod mean, and what to do.

`explain` quotes the cluster's own reason and message first; these add the meaning a
platform engineer would give them: an exit code above 128 is a signal (the shell's and
the container runtime's convention), a container that cannot be created names the missing
Secret or ConfigMap, a pod the kubelet refused names the device plugin, a volume that
cannot be mounted names the storage. Sources, Kubernetes v1.31:
pkg/kubelet/kuberuntime/kuberuntime_container.go (`CreateContainerConfigError`,
`CreateContainerError`), pkg/kubelet/kubelet_pods.go (`ContainerStatusUnknown`: "The
container could not be located when the pod was terminated", exit code 137),
pkg/kubelet/lifecycle/predicate.go (`UnexpectedAdmissionError`, `OutOf<resource>`),
pkg/kubelet/active_deadline.go (`DeadlineExceeded`), pkg/kubelet/nodeshutdown
(`Terminated`: "Pod was terminated in response to imminent node shutdown."),
pkg/controller/util/node/controller_utils.go (`MarkPodsNotReady`: the pod's Ready turns
False and a `NodeNotReady` "Node is not ready" event), pkg/kubelet/volumemanager and the
attach/detach controller (`FailedMount`, `FailedAttachVolume` "Multi-Attach error ...").
"""

from __future__ import annotations

import re
from typing import Any

# 128 + N is the exit status of a process killed by signal N.
_SIGNALS = {
    "SIGKILL": (
        137,
        "SIGKILL: killed from outside the program: the node's OOM killer, or the end of the"
        " termination grace period",
    ),
    "SIGSEGV": (
        139,
        "SIGSEGV: a segmentation fault in native code: a CUDA, NCCL or extension library, or a"
        " DataLoader worker; run with PYTHONFAULTHANDLER=1 to see where",
    ),
    "SIGABRT": (
        134,
        "SIGABRT: the program aborted: a C++ exception or assertion, or a CUDA error in a library",
    ),
    "SIGBUS": (
        135,
        "SIGBUS: usually /dev/shm too small for the DataLoader's workers; mount an emptyDir"
        " with medium: Memory at /dev/shm",
    ),
    "SIGTERM": (
        143,
        "SIGTERM: it was told to stop: the pod was deleted, preempted or evicted, or the job's"
        " deadline passed; the events say by whom",
    ),
    "SIGINT": (130, "SIGINT: interrupted"),
}
_BY_CODE = {code: words for code, words in _SIGNALS.values()}
_EXIT_WORDS = {
    126: "the command is not executable (permission denied, or not a program for this platform)",
    127: "command not found: the image has no such program; check the container's command and PATH",
}


def exit_meaning(code: int) -> str:
    """` (SIGSEGV: ...)` for an exit code that says more than "non-zero", else ""."""
    words = _BY_CODE.get(code) or _EXIT_WORDS.get(code)
    if words is None and 128 < code < 160:
        words = f"killed by signal {code - 128}"
    return f" ({words})" if words else ""


# Container waiting reasons that mean the kubelet could not create or start the container
# (not an image pull, not a crash loop): the pod will not start until its spec or the
# namespace's objects change.
CANNOT_START = {
    "CreateContainerConfigError",
    "CreateContainerError",
    "RunContainerError",
    "ContainerCannotRun",
    "PreCreateHookError",
    "PreStartHookError",
}
_MISSING_OBJECT = re.compile(r'^(secret|configmap) "([^"]+)" not found$', re.I)
_MISSING_KEY = re.compile(r"^couldn't find key (\S+) in (Secret|ConfigMap) (\S+)/(\S+)$")


def cannot_start_hint(message: str) -> str:
    """What to do about a container the kubelet cannot create ("" when the message says
    nothing we know)."""
    text = message.strip()
    missing = _MISSING_OBJECT.match(text)
    if missing:
        kind = "Secret" if missing[1].lower() == "secret" else "ConfigMap"
        return (
            f"; create {kind} {missing[2]} in the pod's namespace, or fix the name the job's"
            " env, envFrom or volumes use"
        )
    key = _MISSING_KEY.match(text)
    if key:
        return f"; add key {key[1]} to {key[2]} {key[4]}, or fix the key the job's env names"
    if "executable file not found" in text or "no such file or directory" in text:
        return "; the image has no such program or path: check the container's command and image"
    return ""


# Pod-level `status.reason` words beyond Evicted, and what each means for a training job.
POD_REASON_HINTS = {
    "UnexpectedAdmissionError": "the kubelet refused the pod after the scheduler placed it:"
    " the node's device plugin could not allocate the devices: GPUs unhealthy, or fewer than it"
    " advertises; check the node's allocatable and the device plugin's log",
    "DeadlineExceeded": "the pod ran longer than its activeDeadlineSeconds",
    "Terminated": "its node was shut down",
    "Shutdown": "its node was shut down",
    "NodeAffinity": "the node no longer matches the pod's node affinity: its labels changed",
    "NodeLost": "its node was lost",
}


def pod_reason_hint(reason: str) -> str:
    if reason.startswith("OutOf"):
        resource = reason.removeprefix("OutOf")
        return (
            f"the kubelet refused the pod: the node has fewer {resource} than the scheduler"
            " counted: a device plugin restarted, or devices failed"
        )
    return POD_REASON_HINTS.get(reason, "")


# Events about a pod that has a node but cannot start: volumes and the pod's network.
STARTUP_EVENTS = {"FailedMount", "FailedAttachVolume", "FailedMapVolume", "FailedCreatePodSandBox"}


def startup_hint(reason: str, message: str) -> str:
    if "Multi-Attach error" in message:
        return (
            " (a ReadWriteOnce volume is attached to another node's pod: a volume every pod of"
            " the job mounts needs ReadWriteMany)"
        )
    if reason == "FailedCreatePodSandBox":
        return (
            " (the CNI could not set up the pod's network: Multus or the RDMA network attachment)"
        )
    if "mount.nfs" in message:
        return " (the NFS server is unreachable from the node, or the export is wrong)"
    return ""


# The operators' events when they cannot create a job's pods: the Training Operator
# (v1.9 pkg/controller.v1/control/pod_control.go `FailedCreatePod`, "Error creating: ..."),
# the batch Job controller of a JobSet or MPI launcher (`FailedCreate`), the MPI Operator
# v0.8 (pkg/controller/mpi_job_controller.go: reason `MPIJobFailed`, "launcher pod created
# failed: ..." / "worker pod created failed: ...").
CREATE_FAILED = {"FailedCreatePod", "FailedCreate"}
_MPI_CREATE = ("launcher pod created failed", "worker pod created failed")


def create_failed(reason: str, message: str) -> bool:
    return reason in CREATE_FAILED or message.startswith(_MPI_CREATE)


def create_hint(message: str) -> str:
    if "exceeded quota" in message:
        return "; the namespace's ResourceQuota is used up: wait for other jobs, or raise the quota"
    if "violates PodSecurity" in message:
        return "; the namespace's Pod Security level refuses the pod: fix its securityContext"
    if "admission webhook" in message:
        return "; an admission webhook refused the pod"
    return ""


# The pod condition Kubernetes 1.26+ sets before it deletes a pod for a disruption; reason ->
# what it means for the job.
DISRUPTION = {
    "PreemptionByScheduler": "Preempted: the scheduler preempted pod {pod} for a higher-priority"
    " pod",
    "DeletionByTaintManager": "NodeLost: pod {pod} was deleted because its node {node} became"
    " not-ready or unreachable",
    "DeletionByPodGC": "NodeLost: pod {pod} was deleted because its node {node} is gone",
    "EvictionByEvictionAPI": "Evicted: pod {pod} was evicted through the Eviction API (a node"
    " drain or a descheduler)",
    "TerminationByKubelet": "Evicted: the kubelet of node {node} terminated pod {pod} (node"
    " pressure or node shutdown)",
}


# The kubelet's ephemeral-storage eviction messages (pkg/kubelet/eviction/helpers.go:
# "The node was low on resource: ephemeral-storage.", "Container %s exceeded its local ephemeral
# storage limit %q.", "Pod ephemeral local storage usage exceeds the total limit of containers
# %s.", "Usage of EmptyDir volume %q exceeds the limit %q.").
_EPHEMERAL = ("ephemeral-storage", "ephemeral local storage", "EmptyDir volume")


def eviction_hint(message: str) -> str:
    """What to do about an eviction, from the kubelet's message ("" when it says nothing
    we know): pkg/kubelet/eviction/helpers.go ("The node was low on resource: %v. ..."),
    eviction_manager.go Admit ("The node had condition: %v. ")."""
    if any(word in message for word in _EPHEMERAL):
        return (
            " (ephemeral storage: the pod wrote more to its container filesystem, logs or"
            " emptyDir volumes than its limit or the node's free disk; write caches and"
            " checkpoints to a volume, or request ephemeral-storage)"
        )
    if "low on resource: memory" in message:
        return (
            " (node memory pressure: the kubelet evicts first the pods that use more memory"
            " than they request; request as much memory as the limit)"
        )
    if message.startswith("The node had condition:"):
        return " (the kubelet refused the pod: its node is under that pressure)"
    return ""


def stuck(name: str, since: str) -> str:
    return (
        f"it has been Terminating since {since} (its node cannot confirm the deletion; once"
        f" the node is gone for good: kubectl delete pod {name} --force --grace-period=0)"
    )


def node_not_ready(pod: dict[str, Any]) -> tuple[str, str] | None:
    """A running pod whose node stopped reporting: the node lifecycle controller turns its
    Ready condition False without a reason (`MarkPodsNotReady`; the kubelet always gives
    one), while its containers still read as they were last seen."""
    status = pod.get("status") or {}
    if status.get("phase") != "Running":
        return None
    for cond in status.get("conditions") or []:
        if (
            cond.get("type") == "Ready"
            and cond.get("status") == "False"
            and cond.get("reason") in {None, "", "NodeNotReady"}
        ):
            node = (pod.get("spec") or {}).get("nodeName") or "?"
            name = (pod.get("metadata") or {}).get("name", "?")
            text = (
                f"NodeNotReady: node {node} of pod {name} is not ready (its kubelet"
                " stopped reporting): the pod's containers are in an unknown state and it is"
                " deleted once its not-ready toleration ends (300 s by default); check the"
                " node (kubectl describe node)"
            )
            return text, str(cond.get("lastTransitionTime") or "")
    return None


def exit_code(term: dict[str, Any]) -> int:
    try:
        return int(term.get("exitCode") or 0)
    except (TypeError, ValueError):
        return 1


def said(term: dict[str, Any], code: int) -> str:
    """The exit code's meaning and the container's termination message (the runtime's, for
    a StartError), on one line."""
    message = " ".join(str(term.get("message") or "").split())
    return exit_meaning(code) + (f": {message[:300]}" if message else "")


def gated(pod: dict[str, Any]) -> str:
    """A pod the scheduler does not try yet: `spec.schedulingGates` (PodScheduled False,
    reason SchedulingGated, kubernetes v1.31 pkg/scheduler/framework/plugins/
    schedulinggates), removed by the controller that added them: Kueue's
    `kueue.x-k8s.io/topology` once topology-aware scheduling assigned the pod a domain."""
    gates = [
        str(g.get("name"))
        for g in (pod.get("spec") or {}).get("schedulingGates") or []
        if isinstance(g, dict)
    ]
    name = (pod.get("metadata") or {}).get("name", "?")
    owners = sorted(
        {
            "Kueue" if g.startswith("kueue.x-k8s.io/") else "the controller that added it"
            for g in gates
        }
    )
    return (
        f"pod {name} waits on its scheduling gates {', '.join(gates) or '?'}: the scheduler"
        f" does not try it until {' or '.join(owners) or 'their controller'} removes them"
    )


# What the container runtime's pull errors mean (containerd and CRI-O's messages, relayed by
# the kubelet in `state.waiting.message` of ErrImagePull / ImagePullBackOff).
_PULL_HINTS = (
    (("not found", "manifest unknown"), "no such image or tag in the registry: check the"
     " image name and tag"),
    (("401 Unauthorized", "403 Forbidden", "pull access denied", "authorization failed",
      "no basic auth credentials"), "the registry refused the credentials: add or fix the"
     " pod's imagePullSecrets"),
    (("x509:", "certificate signed by unknown authority"), "the node does not trust the"
     " registry's certificate"),
    (("toomanyrequests", "429 Too Many Requests"), "the registry rate-limits this node: use"
     " a mirror or authenticated pulls"),
    (("no match for platform", "exec format error"), "the image has no build for the node's"
     " platform (amd64 / arm64)"),
    (("i/o timeout", "no such host", "connection refused"), "the node cannot reach the"
     " registry"),
)  # fmt: skip


def image_hint(message: str) -> str:
    """`; <what to do>` for a pull error we know, else ""."""
    for words, hint in _PULL_HINTS:
        if any(w in message for w in words):
            return f"; {hint}"
    return ""
