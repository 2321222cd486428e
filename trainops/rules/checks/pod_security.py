"""The Pod Security rules: `pod-security-baseline`, the floor every pod template meets on any
cluster and without a profile, and `pod-security`, the cluster's own level.

The floor (`facts/pod_security.py:on_floor`) is what no cluster profile may except: hostPID,
hostIPC, host ports (unless the profile allows host networking, which makes every containerPort
a host port anyway), the node's sensitive paths, unconfined seccomp, custom SELinux, unmasked
/proc, unsafe sysctls. `validate --manifests` in CI has no profile and is still a gate on it.

`pod-security` reports the rest of the cluster's level (its exceptions admitted).
The level is the cluster profile's `podSecurity.level` (the namespaces' enforce label:
baseline, restricted or privileged), or the namespace's own
`pod-security.kubernetes.io/enforce` label where the manifests include the Namespace and it
is stricter. Admission is the judge: it has no per-capability exception, so the exceptions
the profile declares (RDMA's IPC_LOCK, a hostPath under `/dev/infiniband`, hostNetwork where
`network.allowHostNetwork`) are admitted only where the level is `privileged`, and there every
other baseline control still holds (the profile says what the privilege is for). Without
this, `validate` passes pods the cluster's admission then refuses: the job is Created and no
pod ever starts.

`readOnlyRootFilesystem` is not a Pod Security control, so this rule does not require it;
trainops renders it on every container anyway (docs/security.md#read-only-root-filesystem).
"""

from __future__ import annotations

from collections.abc import Iterator

from trainops.core.findings import Severity
from trainops.core.values import as_dict
from trainops.facts import pod_security as pss
from trainops.kube.objects import Object
from trainops.rules.context import Context
from trainops.rules.model import Rule, Violation


def _namespace_level(obj: Object, ctx: Context) -> pss.Level | None:
    for ns in ctx.of_kind("Namespace", ""):
        if ns.name == obj.namespace:
            label = as_dict(ns.manifest.metadata.get("labels")).get(pss.ENFORCE_LABEL)
            return label if label in pss.LEVELS else None
    return None


def _floor(obj: Object, ctx: Context) -> Iterator[Violation]:
    # A profile that allows host networking admits host ports too (Kubernetes makes every
    # containerPort of a hostNetwork pod a host port): `pod-security` judges them there.
    host_network = ctx.cluster is not None and ctx.cluster.network.allow_host_network
    for pod in obj.all_pods:
        for breach in pss.breaches(pod.metadata, pod.spec, restricted=False):
            if host_network and breach.exception == "hostPort":
                continue
            if pss.on_floor(breach):
                yield Violation(
                    f"{breach.message}: Pod Security `baseline` forbids it ({breach.control}),"
                    " on every cluster",
                    (*pod.path, *breach.path),
                )


def _check(obj: Object, ctx: Context) -> Iterator[Violation]:
    cluster = ctx.cluster
    if cluster is None:
        return
    profile = cluster.pod_security
    level: pss.Level = profile.level
    labelled = _namespace_level(obj, ctx)
    if labelled is not None and pss.LEVELS.index(labelled) > pss.LEVELS.index(level):
        level = labelled
    # Admission is the judge: it admits the profile's exceptions only in a namespace labelled
    # `privileged` (it has no per-capability exception), where they are what the privilege is
    # for and every other baseline control still holds (jobspec/admission.py).
    privileged = level == "privileged"
    caps = set(profile.allow_capabilities) if privileged else set()
    paths = set(profile.allow_host_paths) if privileged else set()
    host_network = cluster.network.allow_host_network and privileged
    # A Trainer runtime's pods are partial (the TrainJob's patches complete them): the
    # level's required fields are judged on the pods that run (`pods`), the floor on all.
    for pod in obj.pods:
        for breach in pss.breaches(pod.metadata, pod.spec):
            if breach.level == "restricted" and level != "restricted":
                continue
            if pss.on_floor(breach):
                continue  # `pod-security-baseline`'s, with or without a profile
            if pss.admitted(breach, caps, paths, host_network):
                continue
            yield Violation(
                f"{breach.message}: "
                + (
                    f"the namespaces are labelled Pod Security `privileged` for what"
                    f" `podSecurity` lists only, and this is not among it ({breach.control})"
                    if privileged
                    else f"Pod Security `{level}` forbids it ({breach.control})"
                ),
                (*pod.path, *breach.path),
            )


RULES = (
    Rule(
        slug="pod-security-baseline",
        code="TO610",
        severity=Severity.ERROR,
        summary="A pod template breaks a Pod Security baseline control that no cluster may"
        " except: hostPID, hostIPC, a host port (except where the profile allows host"
        " networking), a sensitive hostPath (`/`, `/etc`, `/proc`, the container runtime's"
        " socket, ...), unconfined seccomp, custom SELinux, unmasked /proc, an unsafe sysctl."
        " Checked with or without a cluster profile.",
        why="Each is a way out of the container onto a node that other teams' jobs share:"
        " the node's processes (hostPID: read their environment, signal them), its shared"
        " memory (hostIPC), its root filesystem or the runtime's socket (start any container)."
        " Baseline admission refuses the pods on any namespace that enforces it, so the job is"
        " created and no pod ever starts; where nothing enforces it, the pod runs with it.",
        fix="Remove the setting. Mount data through a PersistentVolumeClaim, not the node's"
        " filesystem; a training pod never needs the node's PID or IPC namespace.",
        example="hostPID: true\nvolumes:\n  - name: root\n    hostPath: {path: /}",
        check=_floor,
        pods_only=True,
        references=(
            "https://kubernetes.io/docs/concepts/security/pod-security-standards/#baseline",
            "https://github.com/stackrox/kube-linter/blob/main/docs/generated/checks.md#sensitive-host-mounts",
        ),
    ),
    Rule(
        slug="pod-security",
        code="TO603",
        severity=Severity.ERROR,
        summary="A pod template breaks a control of the cluster's Pod Security level"
        " (`podSecurity.level`, the namespaces' enforce label: baseline or restricted; at"
        " privileged, baseline but for what the profile lists) (the floor no profile may"
        " except is `pod-security-baseline`'s).",
        why="Pod Security admission refuses the pods, not the job: the PyTorchJob is"
        " accepted, no pod is ever created, and the GitOps sync still looks healthy. A"
        " baseline breach (host namespaces, hostPath, privileged, added capabilities) is"
        " also a way out of the container onto a node shared with other teams' jobs."
        " (`readOnlyRootFilesystem` is no Pod Security control and is not checked here:"
        " trainops renders it true on every container, `securityContext` opts a job out.)",
        fix="Remove the setting, or have the platform team label the namespaces `privileged`"
        " and declare what for in the cluster profile (`podSecurity: {level: privileged,"
        " allowCapabilities: [IPC_LOCK], allowHostPaths: [/dev/infiniband]}`).",
        example="securityContext:\n  capabilities: {add: [SYS_ADMIN]}",
        check=_check,
        needs_cluster=True,
        references=(
            "https://kubernetes.io/docs/concepts/security/pod-security-standards/",
            "https://kubernetes.io/docs/concepts/security/pod-security-admission/",
        ),
    ),
)
