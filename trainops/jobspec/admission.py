"""A profile's `podSecurity` against the admission its namespace label enforces.

`podSecurity.level` is the level of the training namespaces' `pod-security.kubernetes.io/enforce`
label, and Pod Security admission is the judge: it has no per-capability or per-path exception
(its only exemptions are by user, runtime class or whole namespace, in the API server's
AdmissionConfiguration). So a capability, a hostPath or host networking that the level forbids
cannot be "allowed" beside it: a namespace labelled `baseline` refuses every pod that adds
IPC_LOCK (k8s.io/pod-security-admission `policy/check_capabilities_baseline.go` allows 13
capabilities, IPC_LOCK not among them), mounts a hostPath (`check_hostPathVolumes.go`) or sets
hostNetwork (`check_hostNamespaces.go`). Such a profile is refused at load, with the two ways
out: label the namespaces `privileged` (`level: privileged`, where `allowCapabilities` and
`allowHostPaths` then say what the privilege is for, and the `pod-security` rule holds every
pod to baseline but for them), or drop the exception. `trainops build`'s column, `validate`
and docs/security.md then say the same level.
"""

from __future__ import annotations

from typing import Any

from trainops.core.errors import Addition
from trainops.facts import pod_security as pss
from trainops.jobspec.problems import Collector

PRIVILEGED = "privileged"


def level_allows_capability(level: str, capability: str) -> bool:
    """Whether a namespace labelled `level` admits a container adding `capability` (restricted:
    drop ALL, add at most NET_BIND_SERVICE, `check_capabilities_restricted.go`)."""
    if level == PRIVILEGED:
        return True
    allowed = pss.BASELINE_CAPABILITIES if level == "baseline" else pss.RESTRICTED_CAPABILITIES
    return capability in allowed


def _fix(level: str, what: str) -> str:
    return (
        f"Pod Security admission has no per-{what} exception: a namespace labelled `{level}`"
        f" refuses every pod that {{needs}}; label the training namespaces `privileged` and say"
        " so (`podSecurity.level: privileged`), or drop it (docs/security.md, Pod Security level"
        " per example cluster)"
    )


def check_admission(d: dict[str, Any], out: Collector) -> None:
    """Each exception the profile declares that its level's admission refuses."""
    pod_security = d.get("podSecurity") or {}
    level = str(pod_security.get("level", "baseline"))
    if level == PRIVILEGED:
        return
    # `trainops upgrade`: a repository written when an exception stood beside any level.
    fix = (Addition(str(d.get("name")), ("podSecurity", "level"), (PRIVILEGED,), replace=True),)
    for i, cap in enumerate(pod_security.get("allowCapabilities", ())):
        if not level_allows_capability(level, cap):
            out.add(
                ["podSecurity", "allowCapabilities", i],
                f"`{cap}` is not a capability Pod Security `{level}` allows"
                f" (k8s.io/pod-security-admission check_capabilities_{level}.go); "
                + _fix(level, "capability").format(needs=f"adds {cap}"),
                fix,
            )
    for i, path in enumerate(pod_security.get("allowHostPaths", ())):
        out.add(
            ["podSecurity", "allowHostPaths", i],
            f"Pod Security `{level}` forbids every hostPath volume (check_hostPathVolumes.go),"
            f" `{path}` too; " + _fix(level, "path").format(needs=f"mounts {path}"),
            fix,
        )
    if d.get("network", {}).get("allowHostNetwork") is True:
        out.add(
            ["network", "allowHostNetwork"],
            f"Pod Security `{level}` forbids hostNetwork (check_hostNamespaces.go); "
            + _fix(level, "pod").format(needs="sets hostNetwork"),
            fix,
        )
