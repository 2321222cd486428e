"""The `pod-fence` rule: pods that leave the cluster profile's fence (`jobAccess`) — the
delivery account or an undeclared one, a mounted token, a priority class, scheduler,
`nodeName` or toleration the profile does not allow, control-plane nodes, Secrets read
around `secretEnv`. The job loader refuses the same fields in job specs
(`spec/pod_fence.py`); this rule holds any manifest, `validate --manifests` with
`--cluster` included, to the same fence (`facts/pod_fence.py`, one function for both)."""

from __future__ import annotations

from collections.abc import Iterator

from trainops.core.findings import Severity
from trainops.facts.pod_fence import escapes
from trainops.kube.objects import Object
from trainops.rules.context import Context
from trainops.rules.model import Rule, Violation

SLUG = "pod-fence"


def _check(obj: Object, ctx: Context) -> Iterator[Violation]:
    if ctx.cluster is None:
        return
    for pod in obj.pods:
        # A built pod without the field mounts the token: the kubelet's default.
        for path, message in escapes(pod.spec, ctx.cluster.job_access, token_default=True):
            yield Violation(message, (*pod.spec_path, *path))


RULES = (
    Rule(
        slug=SLUG,
        code="TO650",
        severity=Severity.ERROR,
        summary="A pod that runs as the delivery account or one the cluster profile does not"
        " declare, mounts a token the profile does not grant, picks its own priority class,"
        " scheduler, node or tolerations, targets control-plane nodes, or reads Secrets"
        " around `secretEnv` (Secret/CSI volumes, `envFrom`).",
        why="Pod Security does not see these fields, yet each goes around a fence: the"
        " delivery account may create workloads in the training namespaces (a pod running as"
        " it bypasses the pull-request review); `system-node-critical` preempts other teams;"
        " `default-scheduler` or `nodeName` leaves the Volcano gang and queue; tolerating"
        " every taint reaches the control plane; a Secret volume reads what the namespace"
        " holds for other jobs.",
        fix="Remove the field, or have the platform team allow it in the cluster profile's"
        " `jobAccess` (serviceAccounts with automountToken, priorityClasses, schedulerNames,"
        " tolerations, secretVolumes); read secrets through `secretEnv`.",
        example="spec:\n  serviceAccountName: trainops-delivery\n"
        "  priorityClassName: system-node-critical",
        check=_check,
        needs_cluster=True,
        references=(
            "https://kubernetes.io/docs/concepts/security/service-accounts/",
            "https://kubernetes.io/docs/concepts/scheduling-eviction/pod-priority-preemption/",
            "https://volcano.sh/en/docs/schduler_introduction/",
        ),
    ),
)
