"""A job's pod fields against the fence of each cluster it targets (`facts/pod_fence.py`):
whom its pods run as, how they are scheduled, which secrets they read. Checked on what the
job spec asks for — the first-class fields and the escape hatch (`podTemplate`,
`replicaPodTemplates`) — so an escape is an error at the door, with file and line, on every
cluster kind alike (what the renderer adds itself is the profile's and allowed by it)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from trainops.core.errors import Addition
from trainops.facts.pod_claims import (
    claim_problem,
    claims_used,
    created_claim_problem,
    device_claim_problem,
    device_claims,
    written_volumes,
)
from trainops.facts.pod_fence import escapes
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
        "imagePullSecrets": [{"name": n} for n in d.get("imagePullSecrets") or ()] or None,
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


def _written(d: dict[str, Any]) -> frozenset[str]:
    """The volumes a container the job adds writes: a sidecar, the escape hatch's containers,
    the training container's `extraVolumeMounts` (mounted without `readOnly`, or as a raw
    block device)."""
    names = set(written_volumes({"containers": d.get("sidecars") or []}))
    names |= written_volumes({"containers": [{"volumeMounts": d.get("extraVolumeMounts") or []}]})
    for spec, _, first_class in _asked(d):
        if not first_class:
            names |= written_volumes(spec)
    return frozenset(names)


def _mounts(
    job: model.TrainingJob, d: dict[str, Any]
) -> Iterator[tuple[list[str | int], str, bool]]:
    """(where, claim, whether the job writes it) for each existing claim the job mounts or
    clones: its volumes without `size`, and the escape hatch's volumes."""
    writes_sync = job.data_sync.volume if job.data_sync is not None else None
    written = _written(d)
    for v in job.volumes:
        if not v.create:
            writes = not v.read_only or v.name in (writes_sync, *written)
            yield ["volumes", v.name, "claimName"], v.claim_name, writes
    for spec, where, first_class in _asked(d):
        # The hatch's containers merge into ours: a volume not `readOnly` itself writes.
        for path, claim, writes in claims_used(spec):
            head = "extraVolumes" if first_class else path[0]
            yield [*where, head, *path[1:]], claim, writes


def check_claims(
    job: model.TrainingJob, d: dict[str, Any], clusters: list[model.ClusterProfile], out: Collector
) -> None:
    """Existing claims (a volume's `claimName` without `size`, a PVC or a clone in the escape
    hatch) against each cluster's `jobAccess.sharedClaims`; no claim the profile shares
    created by the job; no existing DRA ResourceClaim (issue 35.1)."""
    own = frozenset(v.claim_name for v in job.volumes if v.create)
    problems: dict[tuple[tuple[str | int, ...], str], list[str]] = {}
    fixes: dict[tuple[tuple[str | int, ...], str], list[Addition]] = {}
    for cluster in clusters:
        fence = cluster.job_access
        found: list[tuple[tuple[str | int, ...], str | None]] = []
        for at, claim, writes in _mounts(job, d):
            problem = claim_problem(claim, writes, own, fence)
            found.append((tuple(at), problem))
            if problem and claim not in dict(fence.shared_claims):
                # A claim the profile does not share yet: sharing it is `trainops upgrade`'s
                # addition (one shared read-only and written to is a choice, not an addition).
                entry = {"name": claim, "writable": True} if writes else {"name": claim}
                addition = Addition(cluster.name, ("jobAccess", "sharedClaims"), (entry,))
                fixes.setdefault((tuple(at), problem), []).append(addition)
        found += [
            (("volumes", v.name, "size"), created_claim_problem(v.claim_name, fence, job.name))
            for v in job.volumes
            if v.create
        ]
        for spec, where, first_class in _asked(d):
            if not first_class:
                found += [((*where, *p), device_claim_problem(n)) for p, n in device_claims(spec)]
        for path, problem in found:
            if problem:
                problems.setdefault((path, problem), []).append(cluster.name)
    for (path, problem), names in problems.items():
        on = ", ".join(f"`{n}`" for n in names)
        out.add(list(path), f"{problem} (cluster {on})", tuple(fixes.get((path, problem), ())))
