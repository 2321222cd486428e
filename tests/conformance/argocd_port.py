"""Argo CD v3.5.1, as far as our Applications depend on it, ported from argoproj/argo-cd at
tag v3.5.1 (read with `git show v3.5.1:<path>`):

- which Applications an AppProject admits, and which objects it lets them sync:
  `pkg/apis/application/v1alpha1/app_project_types.go` (`globMatch`, `IsDestinationPermitted`,
  `isDestinationMatched`, `IsGroupKindNamePermitted`, `IsResourcePermitted`) and
  `pkg/apis/application/v1alpha1/types.go` (`isResourceInList`, `isNamedResourceInList`),
  called from `util/argo/argo.go` (`ValidatePermissions`: an Application whose destination is
  not permitted gets InvalidSpecError and is never synced) and `controller/sync.go`
  (`validateSyncPermissions`, per object, scope from API discovery);
- which account a sync impersonates: `util/settings/impersonation.go`
  (`DeriveServiceAccountToImpersonate`);
- the Applications an ApplicationSet generates: `applicationset/controllers/template/patch.go`
  (`applyTemplatePatch`: a strategic merge patch over the rendered template);
- the order a sync applies objects in: `gitops-engine/pkg/sync/syncwaves/waves.go` (`Wave`),
  `gitops-engine/pkg/sync/sync_tasks.go` (`kindOrder`, `syncTasks.Less`) and
  `gitops-engine/pkg/sync/sync_context.go` (`Sync`: one phase and wave at a time).

A destination cluster is known here by what our objects say of it (a server URL or a
name); Argo CD resolves the other from its cluster secret, which only adds ways to match.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

# gitops-engine/pkg/sync/sync_tasks.go: kindOrder (Helm's order); kinds not listed sort
# after all of these (the map's zero value is the highest).
KIND_ORDER = [
    "Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange", "PodSecurityPolicy",
    "PodDisruptionBudget", "ServiceAccount", "Secret", "SecretList", "ConfigMap",
    "StorageClass", "PersistentVolume", "PersistentVolumeClaim", "CustomResourceDefinition",
    "ClusterRole", "ClusterRoleList", "ClusterRoleBinding", "ClusterRoleBindingList", "Role",
    "RoleList", "RoleBinding", "RoleBindingList", "Service", "DaemonSet", "Pod",
    "ReplicationController", "ReplicaSet", "Deployment", "HorizontalPodAutoscaler",
    "StatefulSet", "Job", "CronJob", "IngressClass", "Ingress", "APIService",
]  # fmt: skip
SYNC_WAVE = "argocd.argoproj.io/sync-wave"
HELM_HOOK_WEIGHT = "helm.sh/hook-weight"


def _glob_regex(pattern: str, one: str = ".") -> str:
    """gobwas/glob without separators (what util/glob compiles): `*` any run, `?` one
    character, `[...]`/`[!...]` classes, `{a,b}` alternatives, `\\` escapes. `one`: what a
    wildcard character may be (Go's filepath.Match: anything but `/`)."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        if c == "*":
            out.append(one + "*")
        elif c == "?":
            out.append(one)
        elif c == "[":
            end = pattern.index("]", i)
            body = pattern[i + 1 : end]
            out.append("[^" + body[1:] + "]" if body.startswith("!") else "[" + body + "]")
            i = end
        elif c == "{":
            end = pattern.index("}", i)
            options = pattern[i + 1 : end].split(",")
            out.append("(?:" + "|".join(re.escape(o) for o in options) + ")")
            i = end
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def glob_match(pattern: str, value: str, allow_negation: bool = False) -> bool:
    """app_project_types.go `globMatch`: `!pattern` negates (where allowed), `*` matches all."""
    if allow_negation and pattern.startswith("!"):
        return not glob_match(pattern[1:], value)
    if pattern == "*":
        return True
    try:
        return re.fullmatch(_glob_regex(pattern), value, re.DOTALL) is not None
    except (ValueError, re.error):  # util/glob: a pattern that does not compile matches nothing
        return False


def filepath_match(pattern: str, value: str) -> bool:
    """Go's `filepath.Match` (what isResourceInList uses for kinds and groups): `*` and `?`
    never match `/`."""
    try:
        return re.fullmatch(_glob_regex(pattern, "[^/]"), value) is not None
    except (ValueError, re.error):  # filepath.ErrBadPattern: no match
        return False


@dataclass(frozen=True)
class Destination:
    """A destination cluster (server URL or name, as our objects give it) and namespace."""

    server: str
    name: str
    namespace: str


def is_destination_matched(project: dict[str, Any], dst: Destination) -> bool:
    """app_project_types.go `isDestinationMatched`."""
    matched_any = False
    for item in project["spec"].get("destinations") or []:
        name_matched = dst.name != "" and glob_match(item.get("name", ""), dst.name, True)
        server_matched = dst.server != "" and glob_match(item.get("server", ""), dst.server, True)
        namespace_matched = glob_match(item.get("namespace", ""), dst.namespace, True)
        deny_name = item.get("name", "").startswith("!")
        deny_server = item.get("server", "").startswith("!")
        deny_namespace = item.get("namespace", "").startswith("!")
        # The Go switch: `case matched`, then the two deny cases (&& binds before ||).
        denied = (not name_matched and deny_name) or (
            not server_matched and deny_server and namespace_matched
        )
        denied_namespace = not namespace_matched and deny_namespace and server_matched
        if (server_matched or name_matched) and namespace_matched:
            matched_any = True
        elif denied or denied_namespace:
            return False
    return matched_any


def application_conditions(app: dict[str, Any], project: dict[str, Any]) -> list[str]:
    """util/argo/argo.go `ValidatePermissions`, its project checks: the Application's project,
    and its destination (server or name, and namespace) against the project's destinations."""
    spec = app["spec"]
    if spec["project"] != project["metadata"]["name"]:
        return [f"application references project {spec['project']} which does not exist"]
    destination = spec.get("destination", {})
    dst = Destination(
        destination.get("server", ""), destination.get("name", ""), destination.get("namespace", "")
    )
    if not is_destination_matched(project, dst):
        return [
            f"application destination server '{dst.server or dst.name}' and namespace"
            f" '{dst.namespace}' do not match any of the allowed destinations in project"
            f" '{project['metadata']['name']}'"
        ]
    return []


def is_group_kind_name_permitted(
    project: dict[str, Any], group: str, kind: str, name: str, namespaced: bool
) -> bool:
    """app_project_types.go `IsGroupKindNamePermitted`. A whitelist that is absent (nil)
    allows every namespaced kind; an empty one allows none. Cluster-scoped kinds need an
    entry (optionally by name)."""
    spec = project["spec"]

    def listed(entries: list[dict[str, str]], by_name: bool) -> bool:
        for item in entries:
            if not filepath_match(item["kind"], kind) or not filepath_match(item["group"], group):
                continue
            if not by_name or not item.get("name") or filepath_match(item["name"], name):
                return True
        return False

    if namespaced:
        white = spec.get("namespaceResourceWhitelist")
        black = spec.get("namespaceResourceBlacklist") or []
        whitelisted = white is None or (len(white) != 0 and listed(white, False))
        return whitelisted and not (black and listed(black, False))
    white = spec.get("clusterResourceWhitelist") or []
    black = spec.get("clusterResourceBlacklist") or []
    return bool(white) and listed(white, True) and not (black and listed(black, True))


def sync_permission_error(
    project: dict[str, Any], cluster: Destination, obj: dict[str, Any], namespaced: bool
) -> str | None:
    """controller/sync.go `validateSyncPermissions` for one object: its kind (scope from
    discovery, `namespaced`), and for a namespaced object its namespace as a destination."""
    group = obj["apiVersion"].rpartition("/")[0]
    meta = obj["metadata"]
    if not is_group_kind_name_permitted(project, group, obj["kind"], meta["name"], namespaced):
        return f"resource {group}:{obj['kind']} is not permitted in project"
    if namespaced:
        dst = Destination(cluster.server, cluster.name, meta.get("namespace", ""))
        if not is_destination_matched(project, dst):
            return f"namespace {meta.get('namespace', '')} is not permitted in project"
    return None


def impersonated_account(
    project: dict[str, Any], app: dict[str, Any], server: str, app_namespace: str
) -> str:
    """util/settings/impersonation.go `DeriveServiceAccountToImpersonate`: the first
    `destinationServiceAccounts` entry whose server and namespace globs match the
    Application's destination; "" when none does (the controller's own account, or an
    error where impersonation is enforced)."""
    dst_namespace = app["spec"]["destination"].get("namespace", "")
    account_namespace = dst_namespace or app_namespace
    for item in project["spec"].get("destinationServiceAccounts") or []:
        if glob_match(item["server"], server) and glob_match(item["namespace"], dst_namespace):
            account = item["defaultServiceAccount"]
            if ":" in account:
                return f"system:serviceaccount:{account}"
            return f"system:serviceaccount:{account_namespace}:{account}"
    return ""


def strategic_merge(base: Any, patch: Any) -> Any:
    """applicationset/controllers/template/patch.go `applyTemplatePatch` as it acts on our
    templates: maps merge key by key; Application has no merge keys on the fields we patch,
    so lists and scalars are replaced."""
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for key, value in patch.items():
            out[key] = strategic_merge(base[key], value) if key in base else value
        return out
    return patch


def wave(obj: dict[str, Any]) -> int:
    """syncwaves.Wave: the sync-wave annotation if it is an integer, else the Helm hook
    weight, else 0."""
    annotations = obj["metadata"].get("annotations") or {}
    for key in (SYNC_WAVE, HELM_HOOK_WEIGHT):
        try:
            return int(annotations[key])
        except (KeyError, ValueError):
            continue
    return 0


def sync_order_key(obj: dict[str, Any]) -> tuple[int, int, str]:
    """syncTasks.Less for the Sync phase: wave, then kind order, then name."""
    kind = obj["kind"]
    kind_rank = KIND_ORDER.index(kind) - len(KIND_ORDER) if kind in KIND_ORDER else 0
    return (wave(obj), kind_rank, obj["metadata"]["name"])


def sync_waves(objects: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """sync_context.go `Sync`: the objects of one Application in the waves a sync applies, in
    order; a wave starts once every task of the one before it has succeeded. Objects of one
    wave are applied together (concurrently), so nothing in a wave may need another of it."""
    waves: dict[int, list[dict[str, Any]]] = {}
    for obj in sorted(objects, key=sync_order_key):
        waves.setdefault(wave(obj), []).append(obj)
    return [waves[w] for w in sorted(waves)]
