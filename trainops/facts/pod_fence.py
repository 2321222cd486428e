"""What a training pod may ask of its cluster, beside Pod Security: whom it runs as, how it is
scheduled, which secrets it reads. One function on one pod spec, called by the job loader
(on what a job spec asks for, file:line, exit 2) and by the `pod-fence` rule (on any
manifest, with `--cluster`), so the two cannot disagree (issue 29, items 1 to 3).

Each field is a way around a fence Pod Security does not see:

- `serviceAccountName`: the delivery account (`trainops-delivery`, which Argo CD and Flux
  impersonate) may create workloads in the training namespaces; a pod running as it, with
  its token mounted, goes around the PR gate. Only accounts the profile declares for jobs,
  and a token only where the profile says the account needs one (the kubelet mounts the
  token unless `automountServiceAccountToken: false`, on the pod or on the ServiceAccount:
  https://kubernetes.io/docs/tasks/configure-pod-container/configure-service-account/).
- `priorityClassName`: `system-node-critical` / `system-cluster-critical` preempt everything
  (kube-scheduler's preemption; the two classes are built in:
  https://kubernetes.io/docs/concepts/scheduling-eviction/pod-priority-preemption/).
- `schedulerName`: `default-scheduler` in a Volcano cluster leaves the gang and the queue
  (Volcano only schedules pods whose schedulerName is `volcano`).
- `nodeName`: binds the pod without any scheduler (no queue, no taints checked but
  NoExecute, no quota).
- tolerations and control-plane node selection: tolerating every taint (`operator: Exists`
  without a key) plus `node-role.kubernetes.io/control-plane` lands a job on a control-plane
  node.
- Secrets: `envFrom` a Secret, Secret and CSI volumes read whatever Secret or external store
  the namespace has; a job's secrets come through `secretEnv` (one `secretKeyRef` per variable,
  reviewed in the spec).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

# The account Argo CD syncs as (AppProject destinationServiceAccounts) and Flux's
# Kustomizations impersonate (render/gitops/flux_rbac.py SERVICE_ACCOUNT; a test keeps the
# two equal): it may write the training namespaces, so no job may run as it.
DELIVERY_SERVICE_ACCOUNTS = frozenset({"trainops-delivery"})

# Node labels of control-plane nodes (kubeadm sets both on older releases):
# https://kubernetes.io/docs/reference/labels-annotations-taints/#node-role-kubernetes-io-control-plane
CONTROL_PLANE_LABELS = frozenset(
    {"node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master"}
)

Path = tuple[str | int, ...]


@dataclass(frozen=True)
class PodFence:
    """What a cluster profile lets job pods ask for (`jobAccess`, plus what the profile
    itself renders: its scheduler, priority class and GPU tolerations)."""

    service_accounts: frozenset[str] = frozenset()
    token_accounts: frozenset[str] = frozenset()
    priority_classes: frozenset[str] = frozenset()
    schedulers: frozenset[str] = frozenset()
    tolerations: tuple[Mapping[str, Any], ...] = ()
    secret_volumes: frozenset[str] = frozenset()
    """Secrets a job may mount as a volume (a CA bundle, a key file): named by the profile."""
    shared_claims: tuple[tuple[str, bool], ...] = ()
    """Existing claims any job may mount that it does not create: (name, writable)."""


def claim_problem(claim: str, writes: bool, own: frozenset[str], fence: PodFence) -> str | None:
    """Why a job may not mount `claim` (written to when `writes`), or None. A job owns the
    claims trainops creates for it; any other claim is another team's data unless the
    profile shares it, read-only unless it says writable (issue 29.3: a job mounting another
    job's checkpoint claim read-write could plant a checkpoint that job resumes from)."""
    if claim in own:
        return None
    shared = dict(fence.shared_claims)
    if claim not in shared:
        return (
            f"claim `{claim}` is neither created by this job (give the volume a `size`) nor"
            " shared by the cluster profile (`jobAccess.sharedClaims`): another job's data"
        )
    if writes and not shared[claim]:
        return (
            f"shared claim `{claim}` is read-only for jobs (`jobAccess.sharedClaims`): mount it"
            " `readOnly: true`, or have the profile declare it `writable: true`"
        )
    return None


def _toleration_key(tol: Mapping[str, Any]) -> tuple[str, str, str, str]:
    operator = str(tol.get("operator") or "Equal")
    return (str(tol.get("key") or ""), operator, str(tol.get("value") or ""),
            str(tol.get("effect") or ""))  # fmt: skip


def escapes(
    pod: Mapping[str, Any], fence: PodFence, token_default: bool
) -> Iterator[tuple[Path, str]]:
    """(path inside the pod spec, message) for each field that leaves the fence.
    `token_default`: whether the token is mounted when the pod says nothing (a built
    manifest: yes, the kubelet's default; a job spec's escape hatch: no, trainops renders
    `automountServiceAccountToken: false`)."""
    yield from _account(pod, fence, token_default)
    yield from _scheduling(pod, fence)
    yield from _secrets(pod, fence)


def _account(
    pod: Mapping[str, Any], fence: PodFence, token_default: bool
) -> Iterator[tuple[Path, str]]:
    for key in ("serviceAccountName", "serviceAccount"):
        name = pod.get(key)
        if not isinstance(name, str):
            continue
        if name in DELIVERY_SERVICE_ACCOUNTS:
            yield (
                (key,),
                (
                    f"`{key}: {name}` is the delivery account Argo CD and Flux apply as: a job"
                    " running as it can create workloads around the review; use an account the"
                    " profile declares in `jobAccess.serviceAccounts`"
                ),
            )
        elif name not in fence.service_accounts:
            declared = ", ".join(sorted(fence.service_accounts)) or "none"
            yield (
                (key,),
                (
                    f"`{key}: {name}` is not an account the cluster profile declares for jobs"
                    f" (`jobAccess.serviceAccounts`: {declared})"
                ),
            )
    account = pod.get("serviceAccountName") or pod.get("serviceAccount") or "default"
    automount = pod.get("automountServiceAccountToken")
    mounted = token_default if automount is None else automount is True
    if mounted and account not in fence.token_accounts:
        yield (
            ("automountServiceAccountToken",),
            (
                f"the pod mounts the token of account `{account}`: set"
                " `automountServiceAccountToken: false`, or declare the account with"
                " `automountToken: true` in the profile's `jobAccess.serviceAccounts`"
            ),
        )


def _scheduling(pod: Mapping[str, Any], fence: PodFence) -> Iterator[tuple[Path, str]]:
    priority = pod.get("priorityClassName")
    if isinstance(priority, str) and priority not in fence.priority_classes:
        allowed = ", ".join(sorted(fence.priority_classes)) or "none"
        yield (
            ("priorityClassName",),
            (
                f"priority class `{priority}` is not one the cluster profile lets jobs use"
                f" (`jobAccess.priorityClasses`: {allowed})"
            ),
        )
    scheduler = pod.get("schedulerName")
    if isinstance(scheduler, str) and scheduler not in fence.schedulers:
        allowed = ", ".join(sorted(fence.schedulers)) or "the cluster's default"
        yield (
            ("schedulerName",),
            (
                f"scheduler `{scheduler}` is not the cluster's ({allowed}): its pods would leave"
                " the queue and gang the profile sets up"
            ),
        )
    if pod.get("nodeName"):
        yield (
            ("nodeName",),
            (
                "`nodeName` binds the pod to a node without any scheduler (no queue, quota or"
                " taints): let the scheduler place it"
            ),
        )
    allowed_tolerations = {_toleration_key(t) for t in fence.tolerations}
    for i, tol in enumerate(pod.get("tolerations") or ()):
        if not isinstance(tol, Mapping) or _toleration_key(tol) in allowed_tolerations:
            continue
        what = (
            "tolerates every taint (`operator: Exists` without a key)"
            if tol.get("operator") == "Exists" and not tol.get("key")
            else f"toleration {dict(tol)} is not one the cluster profile allows"
        )
        yield ("tolerations", i), f"{what}: add it to `jobAccess.tolerations` if jobs need it"
    yield from _control_plane(pod)


def _control_plane(pod: Mapping[str, Any]) -> Iterator[tuple[Path, str]]:
    message = "selects control-plane nodes: training runs on worker nodes"
    for key in pod.get("nodeSelector") or {}:
        if key in CONTROL_PLANE_LABELS:
            yield ("nodeSelector", key), message
    node_affinity = (pod.get("affinity") or {}).get("nodeAffinity") or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    for i, term in enumerate(required.get("nodeSelectorTerms") or ()):
        for j, expr in enumerate((term or {}).get("matchExpressions") or ()):
            if (expr or {}).get("key") in CONTROL_PLANE_LABELS and expr.get(
                "operator"
            ) != "DoesNotExist":
                yield ("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
                       "nodeSelectorTerms", i, "matchExpressions", j), message  # fmt: skip


_SOURCES = {"secret": "Secret", "csi": "CSI"}


def _secrets(pod: Mapping[str, Any], fence: PodFence) -> Iterator[tuple[Path, str]]:
    for i, volume in enumerate(pod.get("volumes") or ()):
        if not isinstance(volume, Mapping):
            continue
        secret = (volume.get("secret") or {}).get("secretName")
        for source in ("secret", "csi"):
            if source in volume and not (source == "secret" and secret in fence.secret_volumes):
                yield (
                    ("volumes", i, source),
                    (
                        f"volume `{volume.get('name')}` mounts a {_SOURCES[source]} volume"
                        ":: a job reads its secrets through `secretEnv` (one variable per"
                        " key, reviewed in the spec), or a Secret the profile lists in"
                        " `jobAccess.secretVolumes`"
                    ),
                )
    for kind in ("containers", "initContainers"):
        for i, container in enumerate(pod.get(kind) or ()):
            for j, source in enumerate((container or {}).get("envFrom") or ()):
                if isinstance(source, Mapping) and "secretRef" in source:
                    yield (
                        (kind, i, "envFrom", j, "secretRef"),
                        (
                            "`envFrom` a Secret exports every key of it into the container: name"
                            " each variable in `secretEnv`"
                        ),
                    )
