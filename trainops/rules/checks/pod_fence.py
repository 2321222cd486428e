"""The `pod-fence` rule: pods that leave the cluster profile's fence (`jobAccess`) — the
delivery account or an undeclared one, a mounted token, a priority class, scheduler,
`nodeName` or toleration the profile does not allow, control-plane nodes, Secrets read
around `secretEnv`. The job loader refuses the same fields in job specs
(`spec/pod_fence.py`); this rule holds any manifest, `validate --manifests` with
`--cluster` included, to the same fence (`facts/pod_fence.py`, one function for both).

Claims too (issue 29.3): a pod mounts only claims its job owns or the profile shares
(read-only unless `writable`). In a manifest set a job owns a claim the set creates (a
PersistentVolumeClaim of that name in its namespace) unless the claim names another job
(label `trainops.dev/job`, which trainops puts on the claims it creates). Without a profile
the rule does not run: nothing says which existing claims are shared, so an unknown claim
could be the team's own dataset or another job's checkpoints (docs/security.md)."""

from __future__ import annotations

from collections.abc import Iterator

from trainops.core.findings import Severity
from trainops.core.values import as_dict
from trainops.facts.pod_claims import (
    claim_problem,
    claims_used,
    created_claim_problem,
    device_claim_problem,
    device_claims,
    written_volumes,
)
from trainops.facts.pod_fence import PodFence, escapes, template_metadata
from trainops.kube.objects import Object
from trainops.kube.pods import PodTemplate
from trainops.render.pod import JOB_LABEL
from trainops.rules.context import Context
from trainops.rules.model import Rule, Violation

SLUG = "pod-fence"


def _check(obj: Object, ctx: Context) -> Iterator[Violation]:
    if ctx.cluster is None:
        return
    fence = ctx.cluster.job_access
    if obj.kind == "PersistentVolumeClaim" and obj.group == "":
        yield from _created_claim(obj, ctx, fence)
    for pod in obj.all_pods:
        # A built pod without the field mounts the token: the kubelet's default.
        for path, message in escapes(pod.spec, fence, token_default=True):
            yield Violation(message, (*pod.spec_path, *path))
        if pod.path:  # a template inside the object (a Pod's metadata is its own)
            for path, message in template_metadata(pod.metadata, obj.namespace):
                yield Violation(message, (*pod.path, "metadata", *path))
        yield from _claims(obj, pod, ctx, fence)
    for path in obj.unread_pod_templates:
        yield Violation(
            f"`{obj.kind}` ({obj.manifest.api_version}) is not a kind trainops reads, and it"
            " holds a pod template: its pods cannot be checked against the cluster profile's"
            " fence; deliver them through a kind trainops reads (docs/security.md)",
            path,
        )


def _created_claim(obj: Object, ctx: Context, fence: PodFence) -> Iterator[Violation]:
    """A claim the set creates: not one the profile shares (the set would own the platform's
    claim and delete it), not a clone of a claim its job may not read (issue 35.1)."""
    creator = as_dict(obj.manifest.metadata.get("labels")).get(JOB_LABEL)
    problem = created_claim_problem(obj.name, fence, creator)
    if problem:
        yield Violation(problem, ("metadata", "name"))
    for key in ("dataSource", "dataSourceRef"):
        source = as_dict(obj.spec.get(key))
        name = source.get("name")
        if source.get("kind") != "PersistentVolumeClaim" or source.get("apiGroup"):
            continue
        if isinstance(name, str) and name != obj.name:
            owned = _owns(obj, name, "PersistentVolumeClaim", ctx)
            clone = claim_problem(name, False, frozenset({name} if owned else ()), fence)
            if clone:
                yield Violation(f"a clone of {clone}", ("spec", key, "name"))


def _owns(obj: Object, name: str, kind: str, ctx: Context) -> bool:
    """The manifest set creates `name` of `kind` beside `obj`, for `obj`'s job or for no job
    named."""
    created = ctx.find(kind, name, obj.namespace)
    if created is None:
        return False
    owner = as_dict(created.manifest.metadata.get("labels")).get(JOB_LABEL)
    job = as_dict(obj.manifest.metadata.get("labels")).get(JOB_LABEL, obj.name)
    return owner is None or owner == job


def _claims(obj: Object, pod: PodTemplate, ctx: Context, fence: PodFence) -> Iterator[Violation]:
    # Written to when a container mounts it without `readOnly` or as a block device (and
    # the volume allows it).
    for path, claim, writes in claims_used(pod.spec, written_volumes(pod.spec)):
        own = frozenset({claim}) if _owns(obj, claim, "PersistentVolumeClaim", ctx) else frozenset()
        problem = claim_problem(claim, writes, own, fence)
        if problem:
            yield Violation(problem, (*pod.spec_path, *path))
    for path, name in device_claims(pod.spec):
        if not _owns(obj, name, "ResourceClaim", ctx):
            yield Violation(device_claim_problem(name), (*pod.spec_path, *path))


RULES = (
    Rule(
        slug=SLUG,
        code="TO650",
        severity=Severity.ERROR,
        summary="A pod that runs as the delivery account or one the cluster profile does not"
        " declare, mounts a token the profile does not grant, picks its own priority class,"
        " scheduler, node or tolerations, targets control-plane nodes, reads Secrets"
        " around `secretEnv` (Secret/CSI/projected volumes, `envFrom`, storage logins, pull"
        " secrets), mounts or clones a claim neither its job's nor shared by the profile (or"
        " a read-only shared one read-write), creates a shared claim, takes an existing DRA"
        " claim; or a kind trainops does not read holds a pod template.",
        why="Pod Security does not see these fields, yet each goes around a fence: the"
        " delivery account may create workloads in the training namespaces (a pod running as"
        " it bypasses the pull-request review); `system-node-critical` preempts other teams;"
        " `default-scheduler` or `nodeName` leaves the Volcano gang and queue; tolerating"
        " every taint reaches the control plane; a Secret volume reads what the namespace"
        " holds for other jobs; a job writing into another job's checkpoint claim plants the"
        " checkpoint that job resumes from.",
        fix="Remove the field, or have the platform team allow it in the cluster profile's"
        " `jobAccess` (serviceAccounts with automountToken, priorityClasses, schedulerNames,"
        " tolerations, secretVolumes, imagePullSecrets, sharedClaims); read secrets through"
        " `secretEnv`; mount a shared claim `readOnly: true` unless the profile declares it"
        " writable, and never give it a `size`.",
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
