"""Argo CD objects: the AppProject that fences training apps in, and the ApplicationSet.

Every setting here is chosen for batch training jobs rather than services;
docs/gitops.md explains each one. The short version:

- no TTL on jobs (the renderer uses `cleanPodPolicy: All`), so a finished job
  stays in the cluster as the record and self-heal has nothing to re-create
  (argo-cd#8586: a TTL-deleted job is OutOfSync/Missing and would train again);
- never `Replace=true`: job specs are immutable in practice, a changed job is
  a new run name, so a sync never deletes and re-creates a job;
- server-side apply and server-side diff, plus ignoreDifferences (respected at
  sync) for what Kueue owns, so operator defaults, status and Kueue's
  `runPolicy.suspend` flip are not drift and a sync never undoes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trainops.facts.kubeflow import KUBEFLOW_GROUP, TRAINING_JOB_KINDS
from trainops.facts.trainer import PATCH_TIME_FIELD, TRAINER_GROUP, TRAINJOB
from trainops.jobspec.model import ClusterProfile, Repository
from trainops.render.delivered import Placed, placed_kinds
from trainops.render.gitops.flux_rbac import ARGOCD_ACCOUNT_NAMESPACE, SERVICE_ACCOUNT
from trainops.render.gitops.kinds import GroupKind
from trainops.render.gitops.notifications import argocd_subscriptions
from trainops.render.trainjob import PATCH_MANAGER

ARGOCD_API = "argoproj.io/v1alpha1"
APPLICATIONSET_NAME = "trainops"
APP_LABEL = "trainops.dev/cluster"
PART_OF = {"app.kubernetes.io/part-of": "trainops"}

# Order matters only for reading; each option is explained in docs/gitops.md.
SYNC_OPTIONS: tuple[str, ...] = (
    "ServerSideApply=true",
    "RespectIgnoreDifferences=true",
    "ApplyOutOfSyncOnly=true",
    "PruneLast=true",
    "PrunePropagationPolicy=foreground",
    "FailOnSharedResource=true",
    "CreateNamespace=false",
)

# Server-side diff: the API server (schema defaults, defaulting webhooks) predicts
# the live object, so operator-defaulted fields are not drift.
# https://argo-cd.readthedocs.io/en/stable/user-guide/diff-strategies/
COMPARE_OPTIONS = "ServerSideDiff=true"

# Retries for transient failures (operator webhook restarting, Kueue webhook not
# ready). 5 tries, 30s doubling to at most 10m: about 15 minutes before giving up,
# shorter than a training job's image pull on a cold node would make a human wait.
RETRY: dict[str, Any] = {
    "limit": 5,
    "backoff": {"duration": "30s", "factor": 2, "maxDuration": "10m"},
}

# Sync history kept per Application; each entry is small, 10 is Argo CD's default.
REVISION_HISTORY_LIMIT = 10


def _destination(cluster: ClusterProfile) -> dict[str, str]:
    """Argo CD destination: by cluster name when the profile gives one, else by server URL."""
    if cluster.delivery.destination_name:
        return {"name": cluster.delivery.destination_name}
    return {"server": cluster.delivery.destination_server}


def delivered_kinds(
    repo: Repository, placed: Mapping[str, frozenset[Placed]] | None = None
) -> tuple[list[GroupKind], list[GroupKind]]:
    """(namespaced, cluster-scoped) kinds the Argo CD clusters' overlays deliver, computed
    from the objects rendered for them: the jobs' and the platform manifests'."""
    namespaced: set[GroupKind] = set()
    cluster_scoped: set[GroupKind] = set()
    for cluster in repo.delivered_by("argocd"):
        found = placed_kinds(repo, cluster) if placed is None else placed[cluster.name]
        for group, kind, namespace in found:
            (cluster_scoped if namespace is None else namespaced).add(GroupKind(group, kind))
    return sorted(namespaced), sorted(cluster_scoped)


def project_roles(project: str) -> list[dict[str, Any]]:
    """Project roles for automation: CI may read and sync the training apps, nothing else
    (no create, update or delete: what an app deploys comes from Git alone)."""
    apps = f"{project}/*"
    return [
        {
            "name": "ci",
            "description": "CI: read and sync the training applications.",
            "policies": [
                f"p, proj:{project}:ci, applications, get, {apps}, allow",
                f"p, proj:{project}:ci, applications, sync, {apps}, allow",
            ],
        },
        {
            "name": "viewer",
            "description": "Read-only view of the training applications.",
            "policies": [f"p, proj:{project}:viewer, applications, get, {apps}, allow"],
        },
    ]


def app_project(
    repo: Repository, placed: Mapping[str, frozenset[Placed]] | None = None
) -> dict[str, Any]:
    """The AppProject: our repo only, each cluster's own namespaces only, and exactly the
    kinds the repository delivers (cluster-scoped ones only from platform manifests)."""
    namespaced, cluster_scoped = delivered_kinds(repo, placed)
    settings = repo.settings
    # The Application's own destination (the account's namespace: Argo CD refuses an
    # Application whose destination namespace matches no entry) and every training namespace
    # (checked per object at sync).
    destinations = [
        {**_destination(cluster), "namespace": namespace}
        for cluster in repo.delivered_by("argocd")
        for namespace in sorted({ARGOCD_ACCOUNT_NAMESPACE, *cluster.namespaces})
    ]
    return {
        "apiVersion": ARGOCD_API,
        "kind": "AppProject",
        "metadata": {
            "name": settings.argocd_project,
            "namespace": settings.argocd_namespace,
            "labels": dict(PART_OF),
        },
        "spec": {
            "description": "Jobs and platform manifests rendered by trainops:"
            " exactly the kinds delivered.",
            "sourceRepos": [settings.repo_url],
            "destinations": destinations,
            # Cluster-scoped: only what clusters/<name>/manifests/ holds (queues, flavors,
            # priority classes); never namespaces, CRDs or RBAC, which no file here renders.
            "clusterResourceWhitelist": [
                {"group": gk.group, "kind": gk.kind} for gk in cluster_scoped
            ],
            # Argo CD >= 2.13 with `application.sync.impersonation.enabled`: syncs run as
            # the cluster's delivery account (gitops/argocd/rbac/), not as the application
            # controller. Argo CD picks it by the Application's destination server and
            # namespace (util/settings/impersonation.go), so the entry names that namespace.
            # Needs a server URL (destinationName clusters: none).
            "destinationServiceAccounts": [
                {
                    "server": cluster.delivery.destination_server,
                    "namespace": ARGOCD_ACCOUNT_NAMESPACE,
                    "defaultServiceAccount": SERVICE_ACCOUNT,
                }
                for cluster in repo.delivered_by("argocd")
                if not cluster.delivery.destination_name
            ],
            "roles": project_roles(settings.argocd_project),
            "namespaceResourceWhitelist": [
                {"group": gk.group, "kind": gk.kind} for gk in namespaced
            ],
        },
    }


def ignore_differences(cluster: ClusterProfile) -> list[dict[str, Any]]:
    """Fields of the job kinds that others own on `cluster`: never drift, never overwritten.

    - `/status`: the operator's (Argo CD 3 ignores status already; stated for 2.x too).
    - `/spec/runPolicy/suspend`: Kueue creates jobs suspended and flips it on admission;
      syncing it back would suspend (stop) a running job. We never set it from Git.
    - pod-template `nodeSelector` / `tolerations`, on Kueue clusters only: Kueue injects its
      ResourceFlavor's node labels and tolerations on admission and removes them on
      suspension. Elsewhere they are ours, and a change to them must show as drift.
    - TrainJob (Trainer v2 clusters): `/spec/suspend` (Kueue, as above), the `time` the
      Trainer's webhook stamps on every runtime patch, and runtime patches other managers own
      (Kueue writes its flavor's node selectors and tolerations in its own entry).
    """
    entries: list[dict[str, Any]] = []
    for job in TRAINING_JOB_KINDS:
        entry: dict[str, Any] = {
            "group": KUBEFLOW_GROUP,
            "kind": job.kind,
            "jsonPointers": ["/status", "/spec/runPolicy/suspend"],
        }
        if cluster.scheduler.kind == "kueue":
            template = f".spec.{job.replica_specs}[]?.template.spec"
            entry["jqPathExpressions"] = [f"{template}.nodeSelector", f"{template}.tolerations"]
        entries.append(entry)
    if cluster.operator.trainer_v2:
        entries.append(
            {
                "group": TRAINER_GROUP,
                "kind": TRAINJOB,
                "jsonPointers": ["/status", "/spec/suspend"],
                "jqPathExpressions": [
                    f".spec.runtimePatches[]?.{PATCH_TIME_FIELD}",
                    f'.spec.runtimePatches[]? | select(.manager != "{PATCH_MANAGER}")',
                ],
            }
        )
    return entries


def _element(cluster: ClusterProfile, notifying: bool) -> dict[str, Any]:
    """One list-generator element: everything that differs between clusters (`notifying`:
    some Argo CD cluster has notifications, so every element carries its subscriptions)."""
    delivery = cluster.delivery
    element = {
        "cluster": cluster.name,
        "destinationName": delivery.destination_name or "",
        "destinationServer": delivery.destination_server,
        "prune": delivery.prune,
        "selfHeal": delivery.self_heal,
        "ignoreDifferences": ignore_differences(cluster),
    }
    if notifying:
        element["notifications"] = argocd_subscriptions(cluster)
    return element


# Booleans, the either/or destination and the per-cluster ignoreDifferences cannot be
# templated inside `template` (its fields are typed), so they go through `templatePatch`,
# a Go template that renders to YAML and is merged over the template.
# https://argo-cd.readthedocs.io/en/stable/operator-manual/applicationset/Template/#template-patch
TEMPLATE_PATCH = """\
spec:
  destination:
    {{- if .destinationName }}
    name: {{ .destinationName | toJson }}
    {{- else }}
    server: {{ .destinationServer | toJson }}
    {{- end }}
  syncPolicy:
    automated:
      prune: {{ .prune }}
      selfHeal: {{ .selfHeal }}
      allowEmpty: false
  ignoreDifferences: {{ .ignoreDifferences | toJson }}
"""


# The Application's notification subscriptions (notifications.py), merged into its annotations.
SUBSCRIPTIONS_PATCH = """\
metadata:
  annotations: {{ .notifications | toJson }}
"""


def application_set(repo: Repository) -> dict[str, Any]:
    """One ApplicationSet generating an Application per Argo CD cluster (`overlays/<cluster>`).

    One Application per cluster, not one per namespace: sync waves order objects within an
    Application only, and a cluster's platform objects and ClusterTrainingRuntimes, shared by
    every namespace, must be applied before the jobs naming them (docs/gitops.md)."""
    settings = repo.settings
    notifying = any(c.notifications for c in repo.delivered_by("argocd"))
    elements = [_element(c, notifying) for c in repo.delivered_by("argocd")]
    return {
        "apiVersion": ARGOCD_API,
        "kind": "ApplicationSet",
        "metadata": {
            "name": APPLICATIONSET_NAME,
            "namespace": settings.argocd_namespace,
            "labels": dict(PART_OF),
        },
        "spec": {
            "goTemplate": True,
            "goTemplateOptions": ["missingkey=error"],
            "generators": [{"list": {"elements": elements}}],
            # Deleting an Application (cluster dropped from the list, ApplicationSet
            # re-created) must not kill the training jobs it managed.
            "syncPolicy": {"preserveResourcesOnDeletion": True},
            "template": {
                "metadata": {
                    "name": "training-{{ .cluster }}",
                    "labels": {**PART_OF, APP_LABEL: "{{ .cluster }}"},
                    "annotations": {"argocd.argoproj.io/compare-options": COMPARE_OPTIONS},
                },
                "spec": {
                    "project": settings.argocd_project,
                    "source": {
                        "repoURL": settings.repo_url,
                        "targetRevision": settings.revision,
                        "path": "overlays/{{ .cluster }}",
                    },
                    # The account's namespace: what Argo CD checks against the project's
                    # destinations and picks the impersonated account by. Every object we
                    # deliver names its own namespace, so none lands here.
                    "destination": {"namespace": ARGOCD_ACCOUNT_NAMESPACE},
                    "syncPolicy": {
                        "syncOptions": list(SYNC_OPTIONS),
                        "retry": RETRY,
                    },
                    "revisionHistoryLimit": REVISION_HISTORY_LIMIT,
                },
            },
            "templatePatch": TEMPLATE_PATCH + (SUBSCRIPTIONS_PATCH if notifying else ""),
        },
    }
