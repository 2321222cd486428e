"""The `pod-security` rule: every pod template meets the cluster's Pod Security level.

The level is the cluster profile's `podSecurity.level` (baseline or restricted), or the
namespace's own `pod-security.kubernetes.io/enforce` label where the manifests include
the Namespace and it is stricter; the exceptions the profile declares (RDMA's IPC_LOCK, a
hostPath under `/dev/infiniband`, hostNetwork where `network.allowHostNetwork`) are
admitted. Without this, `validate` passes pods the cluster's admission then refuses: the
job is Created and no pod ever starts.

`readOnlyRootFilesystem` is not a Pod Security control, so this rule does not require it;
trainops renders it on every container anyway (docs/security.md#read-only-root-filesystem).
"""

from __future__ import annotations

from collections.abc import Iterator

from trainops.core.findings import Severity
from trainops.facts import pod_security as pss
from trainops.rules.context import Context
from trainops.rules.model import Rule, Violation
from trainops.rules.objects import Object
from trainops.rules.values import as_dict


def _namespace_level(obj: Object, ctx: Context) -> pss.Level | None:
    for ns in ctx.of_kind("Namespace", ""):
        if ns.name == obj.namespace:
            label = as_dict(ns.manifest.metadata.get("labels")).get(pss.ENFORCE_LABEL)
            return label if label in pss.LEVELS else None
    return None


def _check(obj: Object, ctx: Context) -> Iterator[Violation]:
    cluster = ctx.cluster
    if cluster is None:
        return
    profile = cluster.pod_security
    level: pss.Level = profile.level
    labelled = _namespace_level(obj, ctx)
    if labelled is not None and pss.LEVELS.index(labelled) > pss.LEVELS.index(level):
        level = labelled
    caps = set(profile.allow_capabilities)
    paths = set(profile.allow_host_paths)
    for pod in obj.pods:
        for breach in pss.breaches(pod.metadata, pod.spec):
            if breach.level == "restricted" and level != "restricted":
                continue
            if pss.admitted(breach, caps, paths, cluster.network.allow_host_network):
                continue
            yield Violation(
                f"{breach.message}: Pod Security `{level}` forbids it ({breach.control})",
                (*pod.path, *breach.path),
            )


RULES = (
    Rule(
        slug="pod-security",
        code="TO603",
        severity=Severity.ERROR,
        summary="A pod template breaks a control of the cluster's Pod Security level"
        " (`podSecurity.level`: baseline or restricted) that the profile does not except.",
        why="Pod Security admission refuses the pods, not the job: the PyTorchJob is"
        " accepted, no pod is ever created, and the GitOps sync still looks healthy. A"
        " baseline breach (host namespaces, hostPath, privileged, added capabilities) is"
        " also a way out of the container onto a node shared with other teams' jobs."
        " (`readOnlyRootFilesystem` is no Pod Security control and is not checked here:"
        " trainops renders it true on every container, `securityContext` opts a job out.)",
        fix="Remove the setting, or have the platform team declare the exception in the"
        " cluster profile (`podSecurity.allowCapabilities: [IPC_LOCK]`,"
        " `podSecurity.allowHostPaths: [/dev/infiniband]`).",
        example="securityContext:\n  capabilities: {add: [SYS_ADMIN]}",
        check=_check,
        needs_cluster=True,
        references=(
            "https://kubernetes.io/docs/concepts/security/pod-security-standards/",
            "https://kubernetes.io/docs/concepts/security/pod-security-admission/",
        ),
    ),
)
