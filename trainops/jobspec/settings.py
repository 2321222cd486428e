"""`trainops.yaml`, the repository's delivery settings: read and checked, and the delivery
tools' own namespaces kept apart from the namespaces jobs run in."""

from __future__ import annotations

from pathlib import Path

from trainops.core import paths
from trainops.core.errors import Problem
from trainops.core.yamlio import Document
from trainops.facts.pod_fence import DELIVERY_NAMESPACE
from trainops.jobspec import model, schemas
from trainops.jobspec.problems import Collector, schema_problems
from trainops.jobspec.spec_files import EMPTY_FILE, single_mapping

SETTINGS_KEYS = {
    "repoURL": "repo_url",
    "revision": "revision",
    "argocdNamespace": "argocd_namespace",
    "argocdProject": "argocd_project",
    "fluxNamespace": "flux_namespace",
}


def load_settings(root: Path) -> tuple[model.RepoSettings, list[Problem]]:
    """The settings (defaults when there is no `trainops.yaml`) and the problems found."""
    path = root / paths.SETTINGS_FILE
    if not path.exists():
        return model.RepoSettings(), []
    doc = single_mapping(path, root)
    if isinstance(doc, list):  # every key is optional: a file holding none is no settings
        return model.RepoSettings(), [p for p in doc if p.message != EMPTY_FILE]
    out = Collector(doc)
    schema_problems(doc, schemas.SETTINGS, out)
    if out.problems:
        return model.RepoSettings(), out.problems
    d = schemas.with_defaults(schemas.SETTINGS, doc.data)
    return model.RepoSettings(**{field: d[key] for key, field in SETTINGS_KEYS.items()}), []


def delivery_namespaces_apart(
    cluster: model.ClusterProfile, doc: Document, settings: model.RepoSettings
) -> list[Problem]:
    """The delivery tools' own namespaces are never training namespaces (issue 29.7): Flux's
    holds the Git credentials and the Kustomizations that impersonate the delivery account,
    Argo CD's its Applications and cluster secrets; a job there could read or edit them."""
    out = Collector(doc)
    tools = {
        settings.flux_namespace: f"the delivery tool's own namespace ({paths.SETTINGS_FILE}"
        " `fluxNamespace`)",
        settings.argocd_namespace: f"the delivery tool's own namespace ({paths.SETTINGS_FILE}"
        " `argocdNamespace`)",
        DELIVERY_NAMESPACE: "the namespace of the account Argo CD delivers as",
    }
    for index, namespace in enumerate(cluster.namespaces):
        if namespace in tools:
            out.add(
                ["namespaces", index],
                f"`{namespace}` is {tools[namespace]}: jobs must not run beside the GitOps"
                " controllers' objects or accounts; use another namespace for training",
            )
    return out.problems
