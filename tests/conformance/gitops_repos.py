"""The repositories the GitOps conformance tests read, rendered and built once per session.

Each is copied, rendered with the CLI (`trainops render`, as a user runs it) and every
kustomization Argo CD or Flux syncs is built with the real kustomize: the objects below are
the ones the controllers receive.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.render.repos import RICH, render
from tests.tools import REPO, copy_inputs, session_scratch
from trainops import build

REPOSITORIES = {
    "shipped": REPO,
    "rich": RICH,
    "variety": REPO / "tests" / "render" / "fixtures" / "variety",
}


@dataclass(frozen=True)
class Rendered:
    """One rendered repository: its profiles as written and its gitops/ objects."""

    root: Path
    profiles: dict[str, dict[str, Any]]
    """Cluster name -> the profile as plain YAML."""
    gitops: dict[str, list[dict[str, Any]]]
    """Path under the root -> the objects of that gitops/ file."""

    def build(self, path: str) -> list[dict[str, Any]]:
        """`kustomize build <path>` (relative to the root; a Flux path may start with ./)."""
        return _build(self.root / path.removeprefix("./"))

    def tool(self, name: str) -> dict[str, dict[str, Any]]:
        """The profiles delivered by `argocd` or `flux`."""
        return {c: p for c, p in self.profiles.items() if p["delivery"]["tool"] == name}


@functools.cache
def _build(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(build.kustomize(path)) if d]


@functools.cache
def rendered(label: str) -> Rendered:
    """The repository `label`, rendered in a scratch directory (kept for the session)."""
    scratch = session_scratch(f"conformance-{label}-")
    root = render(copy_inputs(REPOSITORIES[label], scratch / "repo"))
    profiles = {}
    for path in sorted((root / "clusters").glob("*.yaml")):
        profile = yaml.safe_load(path.read_text(encoding="utf-8"))
        profiles[profile["name"]] = profile
    gitops = {}
    for path in sorted((root / "gitops").rglob("*.yaml")):
        docs = yaml.safe_load_all(path.read_text(encoding="utf-8"))
        gitops[path.relative_to(root).as_posix()] = [d for d in docs if d]
    return Rendered(root, profiles, gitops)


def labels_delivered_by(tool: str) -> list[str]:
    """The repositories with a cluster delivered by `tool` (read from their sources)."""
    out = []
    for label, source in sorted(REPOSITORIES.items()):
        for path in sorted((source / "clusters").glob("*.yaml")):
            if yaml.safe_load(path.read_text(encoding="utf-8"))["delivery"]["tool"] == tool:
                out.append(label)
                break
    return out
