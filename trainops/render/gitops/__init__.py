"""GitOps delivery objects for the rendered overlays: Argo CD and Flux.

`render_gitops(repo)` is a pure function: the repository model in, a mapping of
relative output paths under `gitops/` to one object or a list of objects out.
The renderer writes them with the generated-file header. Argo CD files appear
only when a cluster uses Argo CD, Flux files only for clusters using Flux.
"""

from __future__ import annotations

from typing import Any

from trainops.jobspec.model import Repository
from trainops.render.delivered import placed_kinds
from trainops.render.gitops.argocd import app_project, application_set
from trainops.render.gitops.flux import flux_files
from trainops.render.gitops.flux_rbac import ARGOCD_ACCOUNT_NAMESPACE, delivered, rbac_objects
from trainops.render.gitops.health import argocd_cm_patch
from trainops.render.gitops.notifications import argocd_notifications_cm

__all__ = ["render_gitops"]


def render_gitops(repo: Repository) -> dict[str, Any]:
    """Every gitops/ file: relative path -> object (or list of objects)."""
    files: dict[str, Any] = {}
    # Each cluster's jobs rendered once, not once per gitops/ file that reads their kinds.
    placed = {c.name: placed_kinds(repo, c) for c in repo.clusters.values()}
    if repo.delivered_by("argocd"):
        files["gitops/argocd/appproject.yaml"] = app_project(repo, placed)
        files["gitops/argocd/applicationset.yaml"] = application_set(repo)
        files["gitops/argocd/argocd-cm-health.yaml"] = argocd_cm_patch(repo.settings)
        notifications = argocd_notifications_cm(repo)
        if notifications is not None:
            files["gitops/argocd/argocd-notifications-cm.yaml"] = notifications
        for cluster in repo.delivered_by("argocd"):
            # A cluster nothing is delivered to needs no account.
            if delivered(repo, cluster, placed[cluster.name]):
                files[f"gitops/argocd/rbac/{cluster.name}.yaml"] = rbac_objects(
                    repo, cluster, ARGOCD_ACCOUNT_NAMESPACE, placed[cluster.name]
                )
    files.update(flux_files(repo, placed))
    return dict(sorted(files.items()))
