"""A job's pod fields against the fence of each cluster it targets (`facts/pod_fence.py`):
whom its pods run as, how they are scheduled, which secrets they read. Checked on what the
job spec asks for — the first-class fields and the escape hatch (`podTemplate`,
`replicaPodTemplates`) — so an escape is an error at the door, with file and line, on every
cluster kind alike (what the renderer adds itself is the profile's and allowed by it)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from trainops.core.errors import Addition
from trainops.facts.pod_fence import claim_problem, escapes
from trainops.jobspec import model
from trainops.jobspec.problems import Collector

# First-class fields that are a pod spec's under another name.
_FIRST_CLASS = {"volumes": "extraVolumes", "containers": "sidecars"}


def _asked(d: dict[str, Any]) -> Iterator[tuple[dict[str, Any], list[str | int], bool]]:
    """(pod spec as asked, where it sits in the file, whether its keys are first-class)."""
    first = {
        "serviceAccountName": d.get("serviceAccountName"),
        "priorityClassName": d.get("priorityClassName"),
        "affinity": d.get("affinity"),
        "volumes": d.get("extraVolumes"),
        "containers": d.get("sidecars"),
    }
    yield {k: v for k, v in first.items() if v is not None}, [], True
    templates = [(["podTemplate"], d.get("podTemplate"))]
    templates += [
        (["replicaPodTemplates", r], t) for r, t in sorted(d.get("replicaPodTemplates", {}).items())
    ]
    for where, template in templates:
        if isinstance(template, dict) and isinstance(template.get("spec"), dict):
            yield template["spec"], [*where, "spec"], False


def check_fence(d: dict[str, Any], clusters: list[model.ClusterProfile], out: Collector) -> None:
    """Each escape once per place, naming the clusters whose profile refuses it."""
    found: dict[tuple[tuple[str | int, ...], str], list[str]] = {}
    for cluster in clusters:
        for spec, where, first_class in _asked(d):
            # trainops renders `automountServiceAccountToken: false`: only an explicit true mounts.
            for path, message in escapes(spec, cluster.job_access, token_default=False):
                head = _FIRST_CLASS.get(str(path[0]), path[0]) if first_class else path[0]
                found.setdefault(((*where, head, *path[1:]), message), []).append(cluster.name)
    for (path, message), names in found.items():
        out.add(list(path), f"{message} (cluster {', '.join(f'`{n}`' for n in names)})")


def check_claims(
    job: model.TrainingJob, d: dict[str, Any], clusters: list[model.ClusterProfile], out: Collector
) -> None:
    """Existing claims (a volume's `claimName` without `size`, a PVC in the escape hatch)
    against each cluster's `jobAccess.sharedClaims`."""
    own = frozenset(v.claim_name for v in job.volumes if v.create)
    writes_sync = job.data_sync.volume if job.data_sync is not None else None
    mounts: list[tuple[list[str | int], str, bool]] = [
        (["volumes", v.name, "claimName"], v.claim_name, not v.read_only or v.name == writes_sync)
        for v in job.volumes
        if not v.create
    ]
    for spec, where, first_class in _asked(d):
        if first_class:
            continue
        for i, volume in enumerate(spec.get("volumes") or ()):
            pvc = (volume or {}).get("persistentVolumeClaim") or {}
            if isinstance(pvc.get("claimName"), str):
                path = [*where, "volumes", i, "persistentVolumeClaim", "claimName"]
                mounts.append((path, pvc["claimName"], not pvc.get("readOnly")))
    for path, claim, writes in mounts:
        names = [c.name for c in clusters if claim_problem(claim, writes, own, c.job_access)]
        problem = next(
            (p for c in clusters if (p := claim_problem(claim, writes, own, c.job_access))), None
        )
        if problem:
            # A claim the profile does not share yet: sharing it is the addition (one that is
            # shared read-only and written to is a choice, not an addition).
            shared = {c.name for c in clusters if claim in dict(c.job_access.shared_claims)}
            entry = {"name": claim, "writable": True} if writes else {"name": claim}
            additions = tuple(
                Addition(n, ("jobAccess", "sharedClaims"), (entry,))
                for n in names
                if n not in shared
            )
            out.add(path, f"{problem} (cluster {', '.join(f'`{n}`' for n in names)})", additions)
