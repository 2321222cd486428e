"""The fence around Flux (and Argo CD's destination service accounts): a service account
that may write only the kinds we deliver, only in the namespaces we deliver to.

Without `serviceAccountName` kustomize-controller applies as its own account, normally
cluster-admin: whatever a merged overlay holds (a ClusterRoleBinding, a Namespace, a pod
in kube-system) would be applied. With it, the controller impersonates this account,
which a Role per delivered namespace limits to the (group, kind)s the overlay contains.
The platform's Flux bootstrap applies these objects (it holds the rights to grant them);
`--default-service-account` on kustomize-controller makes impersonation the rule for
every Kustomization (docs/security.md).
"""

from __future__ import annotations

from typing import Any

from trainops.render import objects
from trainops.spec.model import ClusterProfile, Repository

RBAC_API = "rbac.authorization.k8s.io/v1"
SERVICE_ACCOUNT = "trainops-delivery"
PART_OF = {"app.kubernetes.io/part-of": "trainops"}
# What applying, pruning and health-checking an object takes (server-side apply is `patch`).
VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"]


def _plural(kind: str) -> str:
    """The resource name of a kind, by the API's English rules for the kinds we render
    (`NetworkPolicy` -> `networkpolicies`, `Service` -> `services`)."""
    name = kind.lower()
    if name.endswith("y"):
        return name[:-1] + "ies"
    return name + ("es" if name.endswith("s") else "s")


def delivered(repo: Repository, cluster: ClusterProfile) -> dict[str, set[tuple[str, str]]]:
    """Namespace -> the (API group, resource) pairs the cluster's overlay puts there,
    computed from the rendered objects (a kind the renderer starts to emit is covered)."""
    out: dict[str, set[tuple[str, str]]] = {}
    for job in repo.jobs:
        for target in job.targets:
            if target.cluster != cluster.name:
                continue
            rendered = objects.job_objects(job, cluster, target)
            configmap = objects.deepspeed_configmap(job)
            for obj in [*rendered, *([configmap] if configmap else [])]:
                group = obj["apiVersion"].rpartition("/")[0]
                resource = _plural(obj["kind"])
                out.setdefault(obj["metadata"]["namespace"], set()).add((group, resource))
    return out


def _account(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"labels": dict(PART_OF), "name": SERVICE_ACCOUNT, "namespace": namespace},
        "automountServiceAccountToken": False,
    }


def rbac_objects(
    repo: Repository, cluster: ClusterProfile, account_namespace: str | None = None
) -> list[dict[str, Any]]:
    """The service account, and a Role and RoleBinding per delivered namespace.

    `account_namespace`: where the one account lives (Flux impersonates an account of the
    Kustomization's namespace); None: one account in each delivered namespace (Argo CD's
    destination service accounts live in the destination namespace).
    """
    meta = {"labels": dict(PART_OF), "name": SERVICE_ACCOUNT}
    out: list[dict[str, Any]] = []
    if account_namespace is not None:
        out.append(_account(account_namespace))
    for namespace, kinds in sorted(delivered(repo, cluster).items()):
        if account_namespace is None:
            out.append(_account(namespace))
        groups: dict[str, list[str]] = {}
        for group, resource in sorted(kinds):
            groups.setdefault(group, []).append(resource)
        rules = [
            {"apiGroups": [group], "resources": resources, "verbs": list(VERBS)}
            for group, resources in sorted(groups.items())
        ]
        out.append(
            {
                "apiVersion": RBAC_API,
                "kind": "Role",
                "metadata": {**meta, "namespace": namespace},
                "rules": rules,
            }
        )
        out.append(
            {
                "apiVersion": RBAC_API,
                "kind": "RoleBinding",
                "metadata": {**meta, "namespace": namespace},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "Role",
                    "name": SERVICE_ACCOUNT,
                },
                "subjects": [
                    {
                        "kind": "ServiceAccount",
                        "name": SERVICE_ACCOUNT,
                        "namespace": account_namespace or namespace,
                    }
                ],
            }
        )
    return out
