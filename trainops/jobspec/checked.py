"""Which job specs a load checks: every one, except under `--changed`.

A job spec's checks read the spec and the profiles of the clusters it targets (with their
platform objects); `trainops.yaml`, the package, a model config and any other file a change
could reach make `--changed` check everything (`trainops.validate.changes`). So a spec that
did not change, on clusters whose profile and platform objects did not either, answers its
checks as it did at the base: `validate --changed` and `render --check --changed` load it (its
name, targets and kinds feed the duplicate-name check, gitops/ and the other jobs' lookups)
without checking it again, and the push to `main` checks every spec. Each job `--changed`
builds is on a cluster the change reaches, so each built job is checked.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


def spec_targets(data: Any) -> set[str]:
    """The clusters a spec's `targets:` names, read from the spec as written (any shape)."""
    targets = data.get("targets") if isinstance(data, dict) else None
    entries = targets if isinstance(targets, list) else []
    return {str(t["cluster"]) for t in entries if isinstance(t, dict) and "cluster" in t}


@dataclass(frozen=True)
class CheckedSpecs:
    """The job specs a change reaches: the changed ones and those on a reached cluster."""

    files: frozenset[str]
    """The changed job specs, relative to the repository root."""
    clusters: frozenset[str]
    """Clusters the change reaches: a changed profile or platform folder, or a cluster a
    changed spec targets or targeted."""

    def checks(self, file: str, targets: Iterable[str]) -> bool:
        """Whether the spec at `file`, targeting `targets`, is checked."""
        return file in self.files or not self.clusters.isdisjoint(targets)
