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

from trainops.jobspec.model import ClusterProfile, Repository
from trainops.render.delivered import Placed, placed_kinds

RBAC_API = "rbac.authorization.k8s.io/v1"
SERVICE_ACCOUNT = "trainops-delivery"
# Where an Argo CD cluster's delivery account lives: a namespace of its own, which the
# platform creates with the training namespaces (trainops renders no Namespace). Each
# Application's destination namespace, so Argo CD picks this account by it
# (`destinationServiceAccounts`); nothing is delivered into it and the account has no Role
# there.
ARGOCD_ACCOUNT_NAMESPACE = "trainops-delivery"
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


def delivered(
    repo: Repository, cluster: ClusterProfile, placed: frozenset[Placed] | None = None
) -> dict[str, set[tuple[str, str]]]:
    """Namespace -> the (API group, resource) pairs the cluster's overlay puts there
    (`CLUSTER_SCOPE` for the cluster-scoped platform manifests), computed from the rendered
    objects: a kind the renderer or a platform manifest starts to emit is covered. `placed`:
    `placed_kinds(repo, cluster)` when the caller has it already."""
    out: dict[str, set[tuple[str, str]]] = {}
    for group, kind, namespace in placed_kinds(repo, cluster) if placed is None else placed:
        out.setdefault(namespace or CLUSTER_SCOPE, set()).add((group, _plural(kind)))
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
    repo: Repository,
    cluster: ClusterProfile,
    account_namespace: str,
    placed: frozenset[Placed] | None = None,
) -> list[dict[str, Any]]:
    """The one service account (in `account_namespace`), a Role and RoleBinding per delivered
    namespace, and a ClusterRole for the cluster-scoped platform kinds, if any.

    `account_namespace`: Flux impersonates an account of the Kustomization's namespace;
    Argo CD one of its Application's destination namespace (`ARGOCD_ACCOUNT_NAMESPACE`).
    """
    meta = {"labels": dict(PART_OF), "name": SERVICE_ACCOUNT}
    out: list[dict[str, Any]] = [_account(account_namespace)]
    subject = {"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": account_namespace}
    kinds_by_namespace = delivered(repo, cluster, placed)
    cluster_kinds = kinds_by_namespace.pop(CLUSTER_SCOPE, set())
    for namespace, kinds in sorted(kinds_by_namespace.items()):
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
                "subjects": [dict(subject)],
            }
        )
    if cluster_kinds:
        # The platform manifests' cluster-scoped kinds (clusters/<name>/manifests/, owned by
        # the platform team through CODEOWNERS) and Trainer v2's ClusterTrainingRuntimes:
        # exactly those kinds, cluster-wide.
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
                "subjects": [dict(subject)],
            }
        )
    return out
