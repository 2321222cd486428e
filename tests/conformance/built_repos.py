"""Every object trainops builds, for the conformance tests: the shipped repository and the
test repositories (`tests/golden/rich`, `tests/render/fixtures/variety`), each rendered in
this process and each overlay built with the real kustomize, with its cluster profile as
plain YAML (what the platform team wrote, not our model of it).

Built once per test process (`functools.cache`): a dozen overlays take seconds.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.render.repos import RICH, build_overlay, read_yaml, render_in_process
from tests.tools import REPO, copy_inputs, require_kustomize, session_scratch

REPOSITORIES = {
    "shipped": REPO,
    "rich": RICH,
    "variety": REPO / "tests" / "render" / "fixtures" / "variety",
}


@dataclass(frozen=True)
class Overlay:
    """One cluster's built overlay."""

    repo: str
    cluster: str
    profile: dict[str, Any]
    objects: tuple[dict[str, Any], ...]

    @property
    def id(self) -> str:
        return f"{self.repo}/{self.cluster}"

    def of_kind(self, *kinds: str) -> Iterator[dict[str, Any]]:
        return (o for o in self.objects if o.get("kind") in kinds)

    def find(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        for obj in self.of_kind(kind):
            meta = obj["metadata"]
            if meta["name"] == name and (namespace is None or meta.get("namespace") == namespace):
                return obj
        return None


# `repo/cluster` of every overlay, known without building (the test ids).
IDS = [
    f"{name}/{profile.stem}"
    for name, source in REPOSITORIES.items()
    for profile in sorted((source / "clusters").glob("*.yaml"))
]


@functools.cache
def _rendered(name: str) -> Path:
    scratch = session_scratch("trainops-conformance-")
    return render_in_process(copy_inputs(REPOSITORIES[name], scratch / name))


@functools.cache
def overlay(overlay_id: str) -> Overlay:
    """The built overlay `repo/cluster` (rendered once per repository, built once)."""
    require_kustomize()
    name, cluster = overlay_id.split("/")
    root = _rendered(name)
    objects = tuple(build_overlay(root, cluster))
    profile = read_yaml(root / "clusters" / f"{cluster}.yaml")
    return Overlay(name, cluster, profile, objects)


def scheduler(overlay: Overlay) -> dict[str, Any]:
    """The profile's `scheduler` block as written (`name` defaults to the kube default)."""
    return overlay.profile.get("scheduler") or {}
