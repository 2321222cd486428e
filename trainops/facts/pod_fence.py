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
- Secrets: `envFrom` a Secret, Secret and CSI volumes, a `projected` volume's Secret sources,
  and the storage plugins that log in with a Secret (`cephfs`, `rbd`, `flexVolume`, ...) read
  whatever Secret or external store the namespace has; a job's secrets come through
  `secretEnv` (one `secretKeyRef` per variable, reviewed in the spec). A `projected`
  `serviceAccountToken` is the account's token under another name (issue 35.4: audience
  `vault` logs in to Vault as the pod's account), held to the same `automountToken` as the
  kubelet's.
- Claims: facts/pod_claims.py (issue 29.3, 35.1).
- A pod template's metadata: `finalizers`, another `namespace`, `ownerReferences` go onto
  every pod (issue 35.9).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

# The account Argo CD syncs as (AppProject destinationServiceAccounts) and Flux's
# Kustomizations impersonate (render/gitops/flux_rbac.py SERVICE_ACCOUNT; a test keeps the
# two equal): it may write the training namespaces, so no job may run as it.
DELIVERY_SERVICE_ACCOUNTS = frozenset({"trainops-delivery"})
# The namespace the Argo CD delivery account lives in (render/gitops/flux_rbac.py
# ARGOCD_ACCOUNT_NAMESPACE; a test keeps the two equal): never a training namespace, where a
# job could run beside the account and its token (issue 35.9).
DELIVERY_NAMESPACE = "trainops-delivery"

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
    claim_creators: tuple[tuple[str, str], ...] = ()
    """Shared claims a job creates for others (`sharedClaims[].createdBy`): (claim, job)."""
    pull_secrets: frozenset[str] = frozenset()
    """Registry credentials (`imagePullSecrets`) jobs may pull with: named by the profile."""


def template_metadata(
    metadata: Mapping[str, Any], namespace: str | None
) -> Iterator[tuple[Path, str]]:
    """What a pod template's metadata may not carry onto the pods (issue 35.9): finalizers
    (the pods, their GPUs and quota, are never deleted), another namespace, owners."""
    if metadata.get("finalizers"):
        yield (
            ("finalizers",),
            (
                "the pod template's `finalizers` go onto every pod: nothing deletes them until the"
                " finalizer's controller says so (GPUs and quota held); remove them"
            ),
        )
    other = metadata.get("namespace")
    if other is not None and other != namespace:
        yield (
            ("namespace",),
            (
                f"the pod template names namespace `{other}`, not its object's: remove it (the"
                " pods' namespace is the job's)"
            ),
        )
    if metadata.get("ownerReferences"):
        yield (
            ("ownerReferences",),
            (
                "the pod template's `ownerReferences` tie the pods to objects they do not belong"
                " to (garbage collection follows them); remove them"
            ),
        )


def _toleration_key(tol: Mapping[str, Any]) -> tuple[str, str, str, str]:
    operator = str(tol.get("operator") or "Equal")
    return (str(tol.get("key") or ""), operator, str(tol.get("value") or ""),
            str(tol.get("effect") or ""))  # fmt: skip


def _toleration_text(tol: Mapping[str, Any]) -> str:
    """A toleration as YAML flow, in the order people write it (to paste into the profile)."""
    order = ("key", "operator", "value", "effect", "tolerationSeconds")
    keys = [k for k in order if k in tol] + sorted(str(k) for k in tol if k not in order)
    return "{" + ", ".join(f"{k}: {tol[k]}" for k in keys) + "}"


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
    if account in fence.token_accounts:
        return
    for path, volume, source in _projected(pod, "serviceAccountToken"):
        audience = source.get("audience")
        to = f" (audience `{audience}`)" if audience else ""
        yield (
            path,
            (
                f"volume `{volume}` projects a token of account `{account}`{to}: it logs in as"
                " the account wherever the audience trusts it; declare the account with"
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
            else f"toleration {_toleration_text(tol)} is not one the cluster profile allows"
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
_SECRET_ADVICE = (
    ": a job reads its secrets through `secretEnv` (one variable per key, reviewed in the"
    " spec), or a Secret the profile lists in `jobAccess.secretVolumes`"
)
# Storage plugins that log in with a Secret of the pod's namespace (core/v1 VolumeSource:
# `secretRef` of cephfs, rbd, iscsi, flexVolume, scaleIO, storageos, cinder; azureFile's
# `secretName`): the pod reads it through the plugin.
_LOGIN_SECRETS = ("secretRef", "secretName")
_LOGIN_PLUGINS = ("azureFile", "cephfs", "cinder", "flexVolume", "iscsi", "rbd", "scaleIO",
                  "storageos")  # fmt: skip


def _projected(
    pod: Mapping[str, Any], source_key: str
) -> Iterator[tuple[Path, str, Mapping[str, Any]]]:
    """(path, volume name, source) of each `projected` volume source of kind `source_key`."""
    for i, volume in enumerate(pod.get("volumes") or ()):
        if not isinstance(volume, Mapping) or not isinstance(volume.get("projected"), Mapping):
            continue
        for j, source in enumerate(volume["projected"].get("sources") or ()):
            if isinstance(source, Mapping) and isinstance(source.get(source_key), Mapping):
                path = ("volumes", i, "projected", "sources", j, source_key)
                yield path, str(volume.get("name")), source[source_key]


def _secrets(pod: Mapping[str, Any], fence: PodFence) -> Iterator[tuple[Path, str]]:
    yield from _secret_volumes(pod, fence)
    for path, name, source in _projected(pod, "secret"):
        if source.get("name") not in fence.secret_volumes:
            yield path, f"volume `{name}` projects Secret `{source.get('name')}`" + _SECRET_ADVICE
    for i, ref in enumerate(pod.get("imagePullSecrets") or ()):
        if isinstance(ref, Mapping) and ref.get("name") not in fence.pull_secrets:
            allowed = ", ".join(sorted(fence.pull_secrets)) or "none"
            yield (
                ("imagePullSecrets", i),
                f"image pull Secret `{ref.get('name')}` is not one the cluster profile lets jobs"
                f" pull with (`jobAccess.imagePullSecrets`: {allowed}): another team's registry"
                " credentials",
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


def _secret_volumes(pod: Mapping[str, Any], fence: PodFence) -> Iterator[tuple[Path, str]]:
    for i, volume in enumerate(pod.get("volumes") or ()):
        if not isinstance(volume, Mapping):
            continue
        secret = (volume.get("secret") or {}).get("secretName")
        for source in ("secret", "csi"):
            if source in volume and not (source == "secret" and secret in fence.secret_volumes):
                yield (
                    ("volumes", i, source),
                    f"volume `{volume.get('name')}` mounts a {_SOURCES[source]} volume"
                    + _SECRET_ADVICE,
                )
        for plugin in _LOGIN_PLUGINS:
            login = volume.get(plugin)
            if isinstance(login, Mapping) and any(k in login for k in _LOGIN_SECRETS):
                yield (
                    ("volumes", i, plugin),
                    f"volume `{volume.get('name')}` (`{plugin}`) logs in with a Secret of the"
                    " namespace: storage credentials are the platform's; have the platform"
                    " team provide the volume as a claim (`jobAccess.sharedClaims`)",
                )
