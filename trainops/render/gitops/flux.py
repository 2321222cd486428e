"""Flux objects: per cluster, a GitRepository and a Kustomization syncing `overlays/<cluster>`.

Layout (what `flux bootstrap --path` or a fleet repository's Kustomization points at):

    gitops/flux/<cluster>/source.yaml     GitRepository (this repository, base/ + overlays/ only)
    gitops/flux/<cluster>/platform.yaml   Kustomization (./overlays/<cluster>/_platform), when
                                          the cluster has platform manifests or runtimes
    gitops/flux/<cluster>/training.yaml   Kustomization (./overlays/<cluster>/_jobs), depending
                                          on the platform one
    gitops/flux/<cluster>/rbac.yaml       the account both apply as (flux_rbac.py)
    gitops/flux/<cluster>/notifications.yaml  Providers and Alerts, when the profile has
                                          `notifications` (notifications.py)

Two Kustomizations, not one: kustomize-controller server-side dry-runs every object of an
apply stage before applying any (fluxcd/pkg ssa v0.76.1 `ResourceManager.ApplyAll`, used by
kustomize-controller v1.9.4), so a TrainJob beside the ClusterTrainingRuntime it names is
refused by the Trainer's webhook on the first sync. `dependsOn` holds the jobs back until the
platform Kustomization is Ready at the same revision (`checkDependencies`).

No kustomization.yaml is written there: kustomize-controller generates one
that includes every manifest in the directory. docs/gitops.md explains each
setting.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trainops.facts.kubeflow import TRAINING_JOB_KINDS
from trainops.facts.trainer import TRAINER_API, TRAINJOB
from trainops.jobspec.model import ClusterProfile, Repository
from trainops.render.delivered import JOBS_PART, PLATFORM_PART, Placed, has_platform_part
from trainops.render.gitops.flux_rbac import SERVICE_ACCOUNT, rbac_objects
from trainops.render.gitops.notifications import flux_notifications

SOURCE_API = "source.toolkit.fluxcd.io/v1"
KUSTOMIZE_API = "kustomize.toolkit.fluxcd.io/v1"
SOURCE_NAME = "trainops"
PART_OF = {"app.kubernetes.io/part-of": "trainops"}

# How often source-controller polls Git; a webhook Receiver makes it immediate.
SOURCE_INTERVAL = "5m"
# How often the overlay is re-applied (drift correction) when nothing changed.
INTERVAL = "10m"
# How soon a failed apply or health check is retried.
RETRY_INTERVAL = "2m"
# Apply plus health wait. A job counts as healthy once it runs, is suspended by
# Kueue, or succeeded; 15 minutes covers pulling a multi-GB training image on a
# cold node. A job still only Created after that (e.g. gang scheduling waiting
# for GPUs) marks the Kustomization not Ready, which is the signal we want.
TIMEOUT = "15m"

# The artifact holds only what the overlays need: not trainer/, tests/, docs/.
SOURCE_IGNORE = "/*\n!/base/\n!/overlays/\n"


def git_repository(repo: Repository) -> dict[str, Any]:
    """The GitRepository every Flux cluster reads this repository through."""
    settings = repo.settings
    return {
        "apiVersion": SOURCE_API,
        "kind": "GitRepository",
        "metadata": {
            "name": SOURCE_NAME,
            "namespace": settings.flux_namespace,
            "labels": dict(PART_OF),
        },
        "spec": {
            "interval": SOURCE_INTERVAL,
            "url": settings.repo_url,
            "ref": {"branch": settings.revision},
            "ignore": SOURCE_IGNORE,
        },
    }


def _has_true(types: list[str]) -> str:
    """CEL: one of the condition `types` is True. `has()` guards a job with no status yet,
    as Flux's CEL cheatsheet recommends (https://fluxcd.io/flux/cheatsheets/cel-healthchecks/)."""
    quoted = ", ".join(f"'{t}'" for t in types)
    return (
        "has(status.conditions) && status.conditions.exists(c, "
        f"c.type in [{quoted}] && c.status == 'True')"
    )


def health_check_exprs() -> list[dict[str, str]]:
    """CEL health for the Kubeflow job kinds (kstatus does not understand their conditions).

    One entry per GroupKind: kustomize-controller v1.9.4 builds them with fluxcd/pkg
    `runtime/cel` `NewStatusReader` (runtime v0.110.1), which keys them by GroupKind (the
    version is dropped) and stops the Kustomization (Stalled, a terminal error) on a second
    entry for one GroupKind. So one expression serves every served version of a kind: the
    MPI Operator's v2beta1 MPIJob has the v1 condition types (kubeflow/mpi-operator
    `pkg/apis/kubeflow/v2beta1/types.go`), and the apiVersion written is the first served.

    Delivered means started: Running, Succeeded, or Suspended (queued by Kueue) is
    current; Failed is failed. Anything else (Created, Restarting, no status yet) matches
    neither and Flux reads it as in progress, so no `inProgress` expression is given:
    Flux evaluates `inProgress` first, and a job keeps Created=True while it runs.
    """
    return [
        {
            "apiVersion": job.api_versions[0],
            "kind": job.kind,
            "current": _has_true(["Running", "Succeeded", "Suspended"]),
            "failed": _has_true(["Failed"]),
        }
        for job in TRAINING_JOB_KINDS
    ] + [trainjob_health_expr()]


# A TrainJob trains once every child Job that has pods has them all ready: JobSet v0.12.0
# (`calculateReplicatedJobStatuses`) counts a child Job `ready` when its ready and succeeded
# pods reach its parallelism, and `active` as soon as one pod is Pending or Running. So
# `active > 0` alone is true for a TrainJob whose pods wait for their Volcano gang or for
# GPUs; `ready` is not, like the v1 jobs' Running condition (set once their pods run).
TRAINJOB_RUNNING = (
    "has(status.jobsStatus) && status.jobsStatus.exists(j, has(j.ready) && j.ready > 0)"
    " && status.jobsStatus.all(j, !has(j.active) || (has(j.ready) && j.active <= j.ready))"
)


def trainjob_health_expr() -> dict[str, str]:
    """CEL health for a Trainer v2 TrainJob: no Running condition, so started means its child
    Jobs' pods are ready (`TRAINJOB_RUNNING`), or Complete, or Suspended (queued by Kueue)."""
    return {
        "apiVersion": TRAINER_API,
        "kind": TRAINJOB,
        "current": f"({_has_true(['Complete', 'Suspended'])}) || ({TRAINJOB_RUNNING})",
        "failed": _has_true(["Failed"]),
    }


def _kustomization(
    repo: Repository, cluster: ClusterProfile, name: str, part: str
) -> dict[str, Any]:
    """A Kustomization applying `./overlays/<cluster>/<part>` as the fenced account."""
    return {
        "apiVersion": KUSTOMIZE_API,
        "kind": "Kustomization",
        "metadata": {
            "name": name,
            "namespace": repo.settings.flux_namespace,
            "labels": dict(PART_OF),
        },
        "spec": {
            "interval": INTERVAL,
            "retryInterval": RETRY_INTERVAL,
            "timeout": TIMEOUT,
            "sourceRef": {"kind": "GitRepository", "name": SOURCE_NAME},
            "path": f"./overlays/{cluster.name}/{part}",
            "prune": cluster.delivery.prune,
            # Apply as the fenced account of flux_rbac.py, not as the controller (cluster-admin).
            "serviceAccountName": SERVICE_ACCOUNT,
            # Ready only once what it applied is healthy: what `dependsOn` waits for.
            "wait": True,
            # Never recreate objects on an immutable-field change: that re-runs a job.
            # A deliberate replacement is a new run name (docs/gitops.md).
            "force": False,
        },
    }


def platform_kustomization(repo: Repository, cluster: ClusterProfile) -> dict[str, Any] | None:
    """The Kustomization of the cluster's platform manifests and runtimes (None: it has none)."""
    if not has_platform_part(repo, cluster):
        return None
    return _kustomization(repo, cluster, f"training-{cluster.name}-platform", PLATFORM_PART)


def kustomization(repo: Repository, cluster: ClusterProfile) -> dict[str, Any]:
    """The Kustomization that syncs the cluster's jobs, after its platform Kustomization."""
    out = _kustomization(repo, cluster, f"training-{cluster.name}", JOBS_PART)
    platform = platform_kustomization(repo, cluster)
    if platform is not None:
        out["spec"]["dependsOn"] = [{"name": platform["metadata"]["name"]}]
    out["spec"]["healthCheckExprs"] = health_check_exprs()
    return out


def flux_files(
    repo: Repository, placed: Mapping[str, frozenset[Placed]] | None = None
) -> dict[str, Any]:
    """Relative path -> object, for every Flux cluster (`placed`: each one's `placed_kinds`,
    when the caller has them)."""
    files: dict[str, Any] = {}
    for cluster in repo.delivered_by("flux"):
        files[f"gitops/flux/{cluster.name}/source.yaml"] = git_repository(repo)
        files[f"gitops/flux/{cluster.name}/training.yaml"] = kustomization(repo, cluster)
        platform = platform_kustomization(repo, cluster)
        if platform is not None:
            files[f"gitops/flux/{cluster.name}/platform.yaml"] = platform
        if cluster.notifications:
            files[f"gitops/flux/{cluster.name}/notifications.yaml"] = flux_notifications(
                repo, cluster, platform is not None
            )
        files[f"gitops/flux/{cluster.name}/rbac.yaml"] = rbac_objects(
            repo,
            cluster,
            repo.settings.flux_namespace,
            None if placed is None else placed[cluster.name],
        )
    return files
