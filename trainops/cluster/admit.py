"""What trainops creates on a cluster passes what it renders passes (issue 35.3).

`trainops preflight --apply` creates an MPIJob built from the job's own pod template: its
`podTemplate` (hostPID, the node's `/`, a privileged init container) reaches the cluster as
it would through delivery, but without the pull request's `validate`. Before anything is
created, the objects go through the same pipeline `validate` runs on the rendered overlay
(schemas, then every rule with the cluster's profile: Pod Security, `pod-fence`, ...); an
error that is not waived refuses the whole set, and nothing is created.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from trainops.core.findings import Finding, Severity
from trainops.core.manifest import Manifest
from trainops.jobspec.model import ClusterProfile
from trainops.validate.pipeline import validate_manifests


class Refused(Exception):
    """The objects trainops was about to create have error findings: nothing was created."""

    def __init__(self, findings: Sequence[Finding], checked: int) -> None:
        super().__init__(f"{len(findings)} error(s) in what would be created")
        self.findings = list(findings)
        self.checked = checked


def admit(objects: Sequence[dict[str, Any]], profile: ClusterProfile, source: str) -> None:
    """Raise `Refused` when `objects` (made from `source`, the job spec) have an error the
    rendered job would have too; return when they may be created."""
    manifests = [Manifest(obj, source, cluster=profile.name) for obj in objects]
    findings = validate_manifests(manifests, profile)
    errors = [f for f in findings if f.severity is Severity.ERROR and f.waived is None]
    if errors:
        raise Refused(findings, len(manifests))
