"""The whole repository, loaded and checked: its delivery settings (`trainops.yaml`), its jobs,
its cluster profiles and each cluster's platform objects (`clusters/<name>/manifests/`).

`trainops.jobspec.load` builds it; every stage after loading takes it. Re-exported by
`trainops.jobspec.model` with the job's and the profile's types.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from trainops.jobspec.profile import ClusterProfile, DeliveryTool
from trainops.jobspec.schemas import SETTINGS, default

if TYPE_CHECKING:
    # Only an annotation here: `model` re-exports this module, so a run-time import would be
    # circular.
    from trainops.jobspec.model import Target, TrainingJob


@dataclass(frozen=True)
class RepoSettings:
    """Repository-wide delivery settings (`trainops.yaml` at the root; all optional)."""

    repo_url: str = default(SETTINGS, "repoURL")
    """Git URL Argo CD and Flux pull this repository from."""
    revision: str = default(SETTINGS, "revision")
    """Branch (or tag) the clusters follow."""
    argocd_namespace: str = default(SETTINGS, "argocdNamespace")
    """Namespace Argo CD runs in (ApplicationSet, AppProject and argocd-cm live there)."""
    argocd_project: str = default(SETTINGS, "argocdProject")
    """Name of the AppProject that confines the training applications."""
    flux_namespace: str = default(SETTINGS, "fluxNamespace")
    """Namespace Flux runs in (GitRepository and Kustomizations live there)."""


@dataclass(frozen=True)
class PlatformObject:
    """A hand-written object a cluster needs beside its jobs (`clusters/<name>/manifests/`)."""

    file: str
    """The file it came from, relative to the repository root."""
    data: dict[str, Any]
    """The object as written (kind, scope and namespace already checked)."""


@dataclass(frozen=True)
class Repository:
    """Everything under one repo root, loaded and checked."""

    settings: RepoSettings
    """Repository-wide delivery settings (`trainops.yaml`)."""
    jobs: tuple[TrainingJob, ...]
    """Sorted by name."""
    clusters: dict[str, ClusterProfile]
    """By name; iterate `sorted(clusters)` for stable output."""
    platform: dict[str, tuple[PlatformObject, ...]] = field(default_factory=dict)
    """Each cluster's platform objects, by cluster name (clusters without any are absent)."""

    @functools.cached_property
    def placements(self) -> dict[str, tuple[tuple[TrainingJob, Target], ...]]:
        """cluster name -> the jobs that target it with their target entry, by job name.
        Worked out once: every cluster's overlay, gitops/ and `--changed` ask for it, and
        asking each of 60 clusters to scan 5,000 jobs cost a second."""
        out: dict[str, list[tuple[TrainingJob, Target]]] = {}
        for job in self.jobs:
            for target in job.targets:
                out.setdefault(target.cluster, []).append((job, target))
        return {name: tuple(pairs) for name, pairs in out.items()}

    def delivered_by(self, tool: DeliveryTool) -> list[ClusterProfile]:
        """Clusters synced by `tool` (Argo CD or Flux), by name."""
        return [
            self.clusters[n]
            for n in sorted(self.clusters)
            if self.clusters[n].delivery.tool == tool
        ]
