"""Argo CD v3.5.1, as far as our Applications depend on it, ported from argoproj/argo-cd at
tag v3.5.1 (read with `git show v3.5.1:<path>`):

- which Applications an AppProject admits, and which objects it lets them sync:
  `pkg/apis/application/v1alpha1/app_project_types.go` (`globMatch`, `IsSourcePermitted`,
  `IsDestinationPermitted` with `permitOnlyProjectScopedClusters`, `isDestinationMatched`,
  `IsGroupKindNamePermitted`, `IsResourcePermitted`) and `types.go` (`isResourceInList`,
  `isNamedResourceInList`: Go's filepath.Match), called from `util/argo/argo.go`
  (`ValidatePermissions`: the source's repo, then `GetDestinationServer`/`GetDestinationCluster`
  resolving a cluster name, then the destination; any condition is an InvalidSpecError and the
  Application never syncs) and `controller/sync.go` (`validateSyncPermissions`, per object,
  scope from API discovery); `util/git/git.go` (`NormalizeGitURL`);
- which account a sync impersonates: `util/settings/impersonation.go`
  (`DeriveServiceAccountToImpersonate`);
- the Applications an ApplicationSet generates: `applicationset/utils` (`Render`: Go
  text/template, gotemplate.py) and `applicationset/controllers/template/patch.go`
  (`applyTemplatePatch`: a strategic merge patch over the rendered template, then
  `spec.project` put back);
- the order a sync applies objects in: `gitops-engine/pkg/sync/syncwaves/waves.go` (`Wave`),
  `gitops-engine/pkg/sync/sync_tasks.go` (`kindOrder`, `syncTasks.Less`) and
  `gitops-engine/pkg/sync/sync_context.go` (`Sync`: one phase and wave at a time).

Argo CD's clusters (its cluster secrets) are given as `Cluster`s: what a destination name
resolves to. Globs and `strconv.Atoi` are Go's (go_port.py). Each function passes its upstream
unit tests, translated in test_argocd_port.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import yaml

from tests.conformance import go_port, gotemplate

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


def glob_match(
    pattern: str, value: str, allow_negation: bool = False, separators: str = ""
) -> bool:
    """app_project_types.go `globMatch`: `!pattern` negates (where allowed), `*` matches all,
    else util/glob (gobwas: `{a,b}` are alternatives there)."""
    if allow_negation and pattern.startswith("!"):
        return not go_port.glob_match(pattern[1:], value, separators)
    if pattern == "*":
        return True
    return go_port.glob_match(pattern, value, separators)


def normalize_git_url(repo: str) -> str:
    """util/git `NormalizeGitURL`: lower-cased, `git@host:path` as `host/path`, no `.git`;
    "" for what net/url.Parse refuses (here: a bad port or a bad `%` escape)."""
    repo = repo.strip().lower()
    if re.fullmatch(r"(ssh://)?([^/:]*?)@[^@]+", repo) and not repo.startswith("ssh://"):
        repo = "ssh://" + repo.replace(":", "/", 1)
    repo = repo.removesuffix(".git")
    try:
        port = urlsplit(repo).port
    except ValueError:
        return ""
    if re.search(r"%(?![0-9a-f]{2})", repo) or (port is not None and port > 65535):
        return ""
    return repo.removeprefix("ssh://")


def is_source_permitted(project: dict[str, Any], repo_url: str) -> bool:
    """app_project_types.go `IsSourcePermitted`: globs with `/` as the separator."""
    wanted = normalize_git_url(repo_url)
    matched_any = False
    for pattern in project["spec"].get("sourceRepos") or []:
        deny = pattern.startswith("!")
        normalized = ("!" if deny else "") + normalize_git_url(pattern.removeprefix("!"))
        if glob_match(normalized, wanted, True, "/"):
            matched_any = True
        elif deny:
            return False
    return matched_any


def filepath_match(pattern: str, value: str) -> bool:
    """Go's `filepath.Match` as isResourceInList reads it (a malformed pattern: no match)."""
    return go_port.filepath_match_ok(pattern, value)


@dataclass(frozen=True)
class Destination:
    """A destination cluster (server URL or name, as our objects give it) and namespace."""

    server: str
    name: str
    namespace: str


@dataclass(frozen=True)
class Cluster:
    """A cluster Argo CD knows (a cluster secret): its URL, name and, for a project-scoped
    cluster, its project."""

    server: str
    name: str = ""
    project: str = ""


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


def is_destination_permitted(
    project: dict[str, Any], cluster: Cluster | None, namespace: str, clusters: list[Cluster]
) -> bool:
    """app_project_types.go `IsDestinationPermitted`: matched, and with
    `permitOnlyProjectScopedClusters` the cluster must be one of the project's own."""
    if cluster is None:
        return False
    dst = Destination(cluster.server, cluster.name, namespace)
    matched = is_destination_matched(project, dst)
    if matched and project["spec"].get("permitOnlyProjectScopedClusters"):
        own = [c for c in clusters if c.project == project["metadata"]["name"]]
        return any(c.name == dst.name or c.server == dst.server for c in own)
    return matched


def destination_cluster(destination: dict[str, Any], clusters: list[Cluster]) -> Cluster:
    """util/argo/argo.go `GetDestinationServer` then `GetDestinationCluster`: ValueError with
    Argo CD's message when the destination names both, neither, or no single known cluster."""
    name, server = destination.get("name", ""), destination.get("server", "")
    if name and server:
        raise ValueError(
            f"application destination can't have both name and server defined: {name} {server}"
        )
    if server:
        url = server.rstrip("/")
    elif name:
        urls = [c.server for c in clusters if c.name == name]
        if not urls:
            raise ValueError(f"there are no clusters with this name: {name}")
        if len(urls) > 1:
            raise ValueError(
                f"there are {len(urls)} clusters with the same name: [{' '.join(urls)}]"
            )
        url = urls[0]
    else:
        raise ValueError("Destination server missing from app spec")
    found = [c for c in clusters if c.server == url]
    if not found:
        where = f"by server {server!r}" if server else "by URL"
        raise ValueError(f"error getting cluster {where}: cluster not found")
    return found[0]


def application_conditions(
    app: dict[str, Any], project: dict[str, Any], clusters: list[Cluster]
) -> list[str]:
    """util/argo/argo.go `ValidatePermissions` for one source (ours): the source needs a repo
    and a path or chart, its repo must be permitted, the destination must resolve to one
    known cluster (`clusters`), and that cluster and namespace must be permitted."""
    spec = app["spec"]
    proj = project["metadata"]["name"]
    source = spec.get("source") or {}
    if not source.get("repoURL") or not (source.get("path") or source.get("chart")):
        return ["spec.source.repoURL and either spec.source.path or spec.source.chart are required"]
    if source.get("chart") and not source.get("targetRevision"):
        return ["spec.source.targetRevision is required if the manifest source is a helm chart"]
    conditions = []
    if not is_source_permitted(project, source["repoURL"]):
        conditions.append(
            f"application repo {source['repoURL']} is not permitted in project '{proj}'"
        )
    destination = spec.get("destination") or {}
    try:
        cluster = destination_cluster(destination, clusters)
    except ValueError as err:
        return [*conditions, str(err)]
    namespace = destination.get("namespace", "")
    if not is_destination_permitted(project, cluster, namespace, clusters):
        server = cluster.name if destination.get("name") else cluster.server
        conditions.append(
            f"application destination server '{server}' and namespace '{namespace}' do not"
            f" match any of the allowed destinations in project '{proj}'"
        )
    return conditions


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


# util/settings/impersonation.go serviceAccountDisallowedCharSet
SERVICE_ACCOUNT_DISALLOWED = set("!*[]{}\\/")


def impersonated_account(
    project: dict[str, Any], app: dict[str, Any], server: str, app_namespace: str
) -> str:
    """util/settings/impersonation.go `DeriveServiceAccountToImpersonate`: the first
    `destinationServiceAccounts` entry whose server and namespace globs match the
    Application's destination; "" when none does (the controller's own account, or an
    error where impersonation is enforced). ValueError, with Argo CD's message, for a glob
    that does not compile and for an account name that is blank or holds `!*[]{}\\/`."""
    dst_namespace = app["spec"]["destination"].get("namespace", "")
    account_namespace = dst_namespace or app_namespace
    for item in project["spec"].get("destinationServiceAccounts") or []:
        try:
            server_matched = go_port.glob_match_with_error(item.get("server", ""), server)
        except go_port.BadPattern as err:
            raise ValueError(f"invalid glob pattern for destination server: {err}") from None
        try:
            namespace_matched = go_port.glob_match_with_error(
                item.get("namespace", ""), dst_namespace
            )
        except go_port.BadPattern as err:
            raise ValueError(f"invalid glob pattern for destination namespace: {err}") from None
        if server_matched and namespace_matched:
            account = item.get("defaultServiceAccount", "")
            if not account.strip(" ") or SERVICE_ACCOUNT_DISALLOWED & set(account):
                raise ValueError(f"default service account contains invalid chars '{account}'")
            if ":" in account:
                return f"system:serviceaccount:{account}"
            return f"system:serviceaccount:{account_namespace}:{account}"
    return ""


def strategic_merge(base: Any, patch: Any, at: tuple[str, ...] = ()) -> Any:
    """k8s strategicpatch.StrategicMergePatch over an Application: maps merge key by key, a
    null deletes; `metadata.finalizers` (patchStrategy merge in ObjectMeta) merges as a set;
    every other list of Application replaces (its types declare no merge keys)."""
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for key, value in patch.items():
            if value is None:
                out.pop(key, None)
            elif key in base:
                out[key] = strategic_merge(base[key], value, (*at, key))
            else:
                out[key] = value
        return out
    if at == ("metadata", "finalizers") and isinstance(base, list) and isinstance(patch, list):
        return [*base, *(v for v in patch if v not in base)]
    return patch


def apply_template_patch(app: dict[str, Any], patch: Any) -> dict[str, Any]:
    """applicationset/controllers/template/patch.go `applyTemplatePatch`: the rendered patch
    (YAML or JSON, already parsed) must be an Application-shaped map; merged; then the
    template's `spec.project` is put back ("Prevent changes to the `project` field")."""
    if not isinstance(patch, dict):
        raise ValueError(f"invalid templatePatch {patch!r}")
    out: dict[str, Any] = strategic_merge(app, patch)
    project = (app.get("spec") or {}).get("project")
    spec = dict(out.get("spec") or {})
    if project is None:
        spec.pop("project", None)
    else:
        spec["project"] = project
    out["spec"] = spec
    return out


def render_template(node: Any, params: dict[str, Any], options: tuple[str, ...]) -> Any:
    """applicationset/utils `Render` with goTemplate: every string of the template executed as
    a Go template over the generator's parameters (gotemplate.py)."""
    if isinstance(node, dict):
        return {k: render_template(v, params, options) for k, v in node.items()}
    if isinstance(node, list):
        return [render_template(v, params, options) for v in node]
    if isinstance(node, str):
        return gotemplate.execute(node, params, options)
    return node


def generated_applications(appset: dict[str, Any]) -> list[dict[str, Any]]:
    """The Applications a list-generator ApplicationSet generates: each element over
    `template`, then `templatePatch` rendered with the same element, parsed as YAML and
    applied (`applyTemplatePatch`)."""
    spec = appset["spec"]
    options = tuple(spec.get("goTemplateOptions") or ())
    out = []
    for generator in spec["generators"]:
        for element in generator["list"]["elements"]:
            app = render_template(spec["template"], element, options)
            app = {
                "apiVersion": appset["apiVersion"],
                "kind": "Application",
                **app,
                "metadata": {"namespace": appset["metadata"]["namespace"], **app["metadata"]},
            }
            if spec.get("templatePatch"):
                text = gotemplate.execute(spec["templatePatch"], element, options)
                app = apply_template_patch(app, yaml.safe_load(text))
            out.append(app)
    return out


def wave(obj: dict[str, Any]) -> int:
    """syncwaves.Wave: the sync-wave annotation if `strconv.Atoi` reads it, else the Helm hook
    weight (helm.Weight: the same), else 0."""
    annotations = obj["metadata"].get("annotations") or {}
    for key in (SYNC_WAVE, HELM_HOOK_WEIGHT):
        if key in annotations:
            try:
                return go_port.atoi(str(annotations[key]))
            except ValueError:
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
