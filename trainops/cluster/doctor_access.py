"""The doctor's delivery checks: the profile's delivery tool runs (Flux's kustomize-controller,
Argo CD's application controller), Argo CD applies as the delivery account (sync
impersonation), and that account may do what delivering the overlay takes: every verb of
applying, health-checking and pruning each kind Git builds, in each namespace it lands in.

The account's rights are asked as `kubectl auth can-i --as system:serviceaccount:NS:NAME`
asks them: a SelfSubjectAccessReview impersonating it, so what RBAC, webhooks and aggregated
roles grant is what the API server says, not what trainops reads from Roles.
"""

from __future__ import annotations

from collections.abc import Iterator

from trainops.cluster.client import Client
from trainops.cluster.doctor import CONFIGMAP, DEPLOYMENT, Check, fail, guarded, ok, ready
from trainops.cluster.probes import can_i
from trainops.core.manifest import Manifest
from trainops.jobspec.model import ClusterProfile, Repository
from trainops.render.gitops.flux_rbac import ARGOCD_ACCOUNT_NAMESPACE, SERVICE_ACCOUNT

STATEFULSET = ("apps/v1", "StatefulSet")
# Flux applies with kustomize-controller (a Deployment); Argo CD with its application
# controller (a StatefulSet since v2.x), in whatever namespace they were installed.
FLUX_CONTROLLER = ("kustomize-controller", DEPLOYMENT)
ARGOCD_CONTROLLER = ("argocd-application-controller", STATEFULSET)
# Argo CD applies as the destination's service account only with this set in argocd-cm
# (Argo CD v2.13+, "Application Sync with Impersonation").
ARGOCD_CM = "argocd-cm"
IMPERSONATION = "application.sync.impersonation.enabled"
# Server-side apply (patch), creating, reading and watching for health; delete when pruning.
APPLY_VERBS = ("create", "get", "list", "patch", "watch")


def delivery_account(repo: Repository, profile: ClusterProfile) -> str:
    """The user the delivery tool applies the overlay as (render/gitops/flux_rbac.py)."""
    namespace = (
        repo.settings.flux_namespace
        if profile.delivery.tool == "flux"
        else ARGOCD_ACCOUNT_NAMESPACE
    )
    return f"system:serviceaccount:{namespace}:{SERVICE_ACCOUNT}"


def delivery_checks(
    client: Client, repo: Repository, profile: ClusterProfile, built: list[Manifest]
) -> Iterator[Check]:
    tool = profile.delivery.tool
    yield from guarded(f"delivery {tool}", lambda: _controller(client, profile))
    user = delivery_account(repo, profile)
    yield from guarded(f"delivery account {user}", lambda: _access(client, profile, built, user))


def _controller(client: Client, profile: ClusterProfile) -> Iterator[Check]:
    tool = profile.delivery.tool
    name, kind = FLUX_CONTROLLER if tool == "flux" else ARGOCD_CONTROLLER
    check = f"delivery {tool}"
    listed = client.list(client.require(*kind), None)
    found = next((o for o in listed if (o.get("metadata") or {}).get("name") == name), None)
    if found is None:
        yield fail(check, f"no {kind[1]} {name} in any namespace: nothing delivers the overlay")
        return
    up, where = ready(found)
    if not up:
        yield fail(check, f"{kind[1]} {where}: not ready, so nothing syncs")
        return
    if tool == "argocd":
        namespace = (found.get("metadata") or {}).get("namespace")
        cm = client.get(client.require(*CONFIGMAP), namespace, ARGOCD_CM) or {}
        if str((cm.get("data") or {}).get(IMPERSONATION, "")).lower() != "true":
            yield fail(
                check,
                f"{kind[1]} {where}, but {namespace}/{ARGOCD_CM} does not set"
                f' `{IMPERSONATION}: "true"`: Argo CD applies as its own account, not the'
                " delivery account (docs/security.md)",
            )
            return
    yield ok(check, f"{kind[1]} {where}")


def _access(
    client: Client, profile: ClusterProfile, built: list[Manifest], user: str
) -> Iterator[Check]:
    verbs = (*APPLY_VERBS, "delete") if profile.delivery.prune else APPLY_VERBS
    wanted: dict[str, set[tuple[str, str]]] = {}
    for m in built:
        resource = client.resource(m.api_version, m.kind)
        if resource is None:
            continue  # the crd lines say so
        namespace = (m.namespace or "default") if resource.namespaced else ""
        wanted.setdefault(namespace, set()).add((resource.group, resource.plural))
    for namespace, resources in sorted(wanted.items()):
        where = f"namespace {namespace}" if namespace else "cluster scope"
        check = f"delivery account in {where}"
        denied = []
        for group, plural in sorted(resources):
            refused = [
                verb
                for verb in verbs
                if not can_i(
                    client,
                    user,
                    {"verb": verb, "group": group, "resource": plural, "namespace": namespace},
                )
            ]
            if refused:
                what = f"{plural}.{group}" if group else plural
                denied.append(f"{'/'.join(refused)} {what}")
        if denied:
            yield fail(
                check,
                f"{user} may not {'; '.join(denied)}: the sync fails there; apply the RBAC"
                " trainops renders under gitops/ (or grant it)",
            )
        else:
            yield ok(check, f"{user} may {'/'.join(verbs)} the {len(resources)} kinds delivered")
