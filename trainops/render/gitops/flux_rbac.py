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

from trainops.render.delivered import cluster_objects
from trainops.spec.model import ClusterProfile, Repository

RBAC_API = "rbac.authorization.k8s.io/v1"
SERVICE_ACCOUNT = "trainops-delivery"
PART_OF = {"app.kubernetes.io/part-of": "trainops"}
# What applying, pruning and health-checking an object takes (server-side apply is `patch`).
VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"]
# Kinds whose resource name the English rule below does not give (the API reference's).
PLURALS = {"NetworkAttachmentDefinition": "network-attachment-definitions"}
# Where `delivered` files the cluster-scoped kinds (platform manifests: queues, flavors,
# priority classes): a ClusterRole limited to them, never to anything else.
CLUSTER_SCOPE = ""


def _plural(kind: str) -> str:
    """The resource name of a kind, by the API's English rules for the kinds we render
    (`NetworkPolicy` -> `networkpolicies`, `Service` -> `services`)."""
    if kind in PLURALS:
        return PLURALS[kind]
    name = kind.lower()
    if name.endswith("y"):
        return name[:-1] + "ies"
    return name + ("es" if name.endswith("s") else "s")


def delivered(repo: Repository, cluster: ClusterProfile) -> dict[str, set[tuple[str, str]]]:
    """Namespace -> the (API group, resource) pairs the cluster's overlay puts there
    (`CLUSTER_SCOPE` for the cluster-scoped platform manifests), computed from the rendered
    objects: a kind the renderer or a platform manifest starts to emit is covered."""
    out: dict[str, set[tuple[str, str]]] = {}
    for obj in cluster_objects(repo, cluster):
        group = obj["apiVersion"].rpartition("/")[0]
        namespace = obj["metadata"].get("namespace", CLUSTER_SCOPE)
        out.setdefault(namespace, set()).add((group, _plural(obj["kind"])))
    return out


def _rules(kinds: set[tuple[str, str]]) -> list[dict[str, Any]]:
    groups: dict[str, list[str]] = {}
    for group, resource in sorted(kinds):
        groups.setdefault(group, []).append(resource)
    return [
        {"apiGroups": [group], "resources": resources, "verbs": list(VERBS)}
        for group, resources in sorted(groups.items())
    ]


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
    kinds_by_namespace = delivered(repo, cluster)
    cluster_kinds = kinds_by_namespace.pop(CLUSTER_SCOPE, set())
    for namespace, kinds in sorted(kinds_by_namespace.items()):
        if account_namespace is None:
            out.append(_account(namespace))
        out.append(
            {
                "apiVersion": RBAC_API,
                "kind": "Role",
                "metadata": {**meta, "namespace": namespace},
                "rules": _rules(kinds),
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
    if cluster_kinds:
        # The platform manifests' cluster-scoped kinds (clusters/<name>/manifests/, owned by
        # the platform team through CODEOWNERS): exactly those kinds, cluster-wide.
        subjects = sorted({account_namespace or ns for ns in kinds_by_namespace})
        name = f"{SERVICE_ACCOUNT}-platform"
        out.append(
            {
                "apiVersion": RBAC_API,
                "kind": "ClusterRole",
                "metadata": {"labels": dict(PART_OF), "name": name},
                "rules": _rules(cluster_kinds),
            }
        )
        out.append(
            {
                "apiVersion": RBAC_API,
                "kind": "ClusterRoleBinding",
                "metadata": {"labels": dict(PART_OF), "name": name},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": name,
                },
                "subjects": [
                    {"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": ns}
                    for ns in subjects
                ],
            }
        )
    return out
