"""What each cluster's overlay delivers, from the model: the jobs that target it (their
objects for that cluster and their generated ConfigMaps) and its platform objects. The
kustomize invariant compares `kustomize build overlays/<cluster>` with it, and the Argo CD
AppProject allows exactly the kinds found here."""

from __future__ import annotations

import copy
from typing import Any

from trainops.facts import argocd
from trainops.jobspec.model import ClusterProfile, PlatformObject, Repository, Target, TrainingJob
from trainops.render import alerts, dashboard, objects, runtimes

# Argo CD applies lower waves first: queues, flavors, priority classes and networks exist
# before the claims and runtimes (-1) and the jobs (0) that name them. A wave the author set
# is kept.
PLATFORM_SYNC_WAVE = argocd.PLATFORM_WAVE

# An overlay in two parts: what must be applied before any job (platform manifests and
# Trainer v2 runtimes), and the jobs. `overlays/<cluster>` is the two together (Argo CD syncs
# it, sync waves order it); Flux applies each with its own Kustomization, the jobs' depending
# on the platform's (gitops/flux.py). A job name (a DNS label) cannot start with `_`.
PLATFORM_PART = "_platform"
JOBS_PART = "_jobs"


def has_platform_part(repo: Repository, cluster: ClusterProfile) -> bool:
    """Whether `overlays/<cluster>/_platform/` exists: platform manifests or runtimes."""
    return bool(repo.platform.get(cluster.name)) or cluster.operator.trainer_v2


def targets_on(repo: Repository, cluster: ClusterProfile) -> list[tuple[TrainingJob, Target]]:
    """Jobs that run on `cluster`, with their target entry, by job name."""
    return list(repo.placements.get(cluster.name, ()))


def platform_object(item: PlatformObject) -> dict[str, Any]:
    """A platform object as delivered: as written, with a sync wave before the jobs."""
    data = copy.deepcopy(item.data)
    annotations = data["metadata"].setdefault("annotations", {})
    annotations.setdefault(objects.SYNC_WAVE, PLATFORM_SYNC_WAVE)
    return data


def monitoring_objects(repo: Repository, cluster: ClusterProfile) -> list[dict[str, Any]]:
    """The cluster's training alerts (a PrometheusRule per namespace with jobs) and its Grafana
    dashboard ConfigMap, as the profile's `monitoring:` asks (docs/monitoring.md); nothing for a
    cluster no job targets (it has nothing to watch, and no delivery account to write with)."""
    jobs = [job for job, _ in targets_on(repo, cluster)]
    if not jobs:
        return []
    return alerts.prometheus_rules(cluster, jobs) + dashboard.dashboard_objects(cluster)


Placed = objects.Placed


def _placed(obj: dict[str, Any]) -> Placed:
    return obj["apiVersion"].rpartition("/")[0], obj["kind"], obj["metadata"].get("namespace")


def placed_kinds(repo: Repository, cluster: ClusterProfile) -> frozenset[Placed]:
    """Where each kind of the cluster's overlay goes: what the Argo CD AppProject and the
    delivery accounts must allow. The cluster's own objects are built (a few); its jobs'
    kinds come from `objects.job_placed`, which builds nothing."""
    own = [platform_object(item) for item in repo.platform.get(cluster.name, ())]
    own += monitoring_objects(repo, cluster)
    if cluster.operator.trainer_v2:
        own += runtimes.cluster_runtimes(cluster, [job for job, _ in targets_on(repo, cluster)])
    out = {_placed(obj) for obj in own}
    for job, _ in targets_on(repo, cluster):
        out |= objects.job_placed(job, cluster)
    return frozenset(out)


def cluster_objects(repo: Repository, cluster: ClusterProfile) -> list[dict[str, Any]]:
    """What `kustomize build overlays/<cluster>` must produce (the generated DeepSpeed
    ConfigMap under its unhashed name)."""
    out = [platform_object(item) for item in repo.platform.get(cluster.name, ())]
    out += monitoring_objects(repo, cluster)
    if cluster.operator.trainer_v2:
        out += runtimes.cluster_runtimes(cluster, [job for job, _ in targets_on(repo, cluster)])
    for job, target in targets_on(repo, cluster):
        out += objects.job_objects(job, cluster, target)
        configmap = objects.deepspeed_configmap(job)
        if configmap is not None:
            out.append(configmap)
    return out
