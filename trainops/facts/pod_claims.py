"""The claims a pod reaches (issue 29.3, 35.1): a job's own claims, the profile's shared ones
(read-only unless `writable`), and nothing else. The job loader (`jobspec/pod_fence.py`)
and the `pod-fence` rule read pods through these functions, so the two cannot disagree.

A pod reads and writes the claims of its volumes (a raw block device, `volumeDevices`, has no
read-only switch but the claim's own), and a clone reads the claim it copies (an ephemeral
volume's `dataSource`); a job that creates a claim the profile shares would own the
platform's claim and delete it with the job; a DRA `resourceClaimName` takes a device claim
another pod may hold.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from trainops.facts.pod_fence import Path, PodFence


def claim_problem(claim: str, writes: bool, own: frozenset[str], fence: PodFence) -> str | None:
    """Why a job may not mount `claim` (written to when `writes`), or None. A job owns the
    claims trainops creates for it; any other claim is another team's data unless the
    profile shares it, read-only unless it says writable (issue 29.3: a job mounting another
    job's checkpoint claim read-write could plant a checkpoint that job resumes from)."""
    if claim in own:
        return None
    shared = dict(fence.shared_claims)
    if claim not in shared:
        return (
            f"claim `{claim}` is neither created by this job (give the volume a `size`) nor"
            " shared by the cluster profile (`jobAccess.sharedClaims`): another job's data"
        )
    if writes and not shared[claim]:
        return (
            f"shared claim `{claim}` is read-only for jobs (`jobAccess.sharedClaims`): mount it"
            " `readOnly: true`, or have the profile declare it `writable: true`"
        )
    return None


def created_claim_problem(claim: str, fence: PodFence, job: str | None) -> str | None:
    """Why job `job` may not create (own) `claim`, or None: a claim the profile shares
    belongs to the platform, unless the profile names the job that creates it (`createdBy`);
    any other job's delivery would own it and delete it, and everyone's data, with the job
    (issue 35.1)."""
    if claim not in dict(fence.shared_claims):
        return None
    creator = dict(fence.claim_creators).get(claim)
    if creator is not None and creator == job:
        return None
    owner = f"job `{creator}`'s (`createdBy`)" if creator else "the platform's"
    return (
        f"claim `{claim}` is shared by the cluster profile (`jobAccess.sharedClaims`) and"
        f" {owner}: a job that creates it (a `size`) would own it and delete it with the job;"
        " mount it without `size`"
    )


def written_volumes(pod: Mapping[str, Any]) -> frozenset[str]:
    """Volumes some container of `pod` can write: mounted without `readOnly`, or attached as a
    raw block device (`volumeDevices` has no read-only switch; only the claim's own does)."""
    names = set()
    for kind in ("containers", "initContainers"):
        for container in pod.get(kind) or ():
            if not isinstance(container, Mapping):
                continue
            for mount in container.get("volumeMounts") or ():
                if isinstance(mount, Mapping) and not mount.get("readOnly"):
                    names.add(str(mount.get("name")))
            for device in container.get("volumeDevices") or ():
                if isinstance(device, Mapping):
                    names.add(str(device.get("name")))
    return frozenset(names)


def claims_used(
    pod: Mapping[str, Any], written: frozenset[str] | None = None
) -> Iterator[tuple[Path, str, bool]]:
    """(path of the claim's name in the pod spec, claim, whether the pod can write it) for each
    PersistentVolumeClaim a volume mounts or clones. `written`: the volumes containers write
    (`written_volumes`); None when the containers are not all known (a job's escape hatch,
    merged into what trainops renders): then every volume not `readOnly` itself writes."""
    for i, volume in enumerate(pod.get("volumes") or ()):
        if not isinstance(volume, Mapping):
            continue
        pvc = volume.get("persistentVolumeClaim")
        if isinstance(pvc, Mapping) and isinstance(pvc.get("claimName"), str):
            writes = not pvc.get("readOnly") and (written is None or volume.get("name") in written)
            yield ("volumes", i, "persistentVolumeClaim", "claimName"), pvc["claimName"], writes
        template = (volume.get("ephemeral") or {}).get("volumeClaimTemplate") or {}
        for key in ("dataSource", "dataSourceRef"):
            source = (template.get("spec") or {}).get(key)
            if (
                isinstance(source, Mapping)
                and source.get("kind") == "PersistentVolumeClaim"
                and not source.get("apiGroup")
                and isinstance(source.get("name"), str)
            ):
                path = ("volumes", i, "ephemeral", "volumeClaimTemplate", "spec", key, "name")
                yield path, source["name"], False


def device_claims(pod: Mapping[str, Any]) -> Iterator[tuple[Path, str]]:
    """(path, name) of each existing DRA ResourceClaim the pod names (`resourceClaimName`,
    at the pod claim or in its `source`); a
    `resourceClaimTemplateName` makes the pod its own claim and is not listed."""
    for i, claim in enumerate(pod.get("resourceClaims") or ()):
        if not isinstance(claim, Mapping):
            continue
        # Kubernetes 1.31 moved it out of `source` (1.26 to 1.30).
        for where, node in (((), claim), (("source",), claim.get("source"))):
            if isinstance(node, Mapping) and isinstance(node.get("resourceClaimName"), str):
                yield ("resourceClaims", i, *where, "resourceClaimName"), node["resourceClaimName"]


def device_claim_problem(name: str) -> str:
    return (
        f"`resourceClaimName: {name}` takes an existing ResourceClaim: a device another pod or"
        " team holds; use `resourceClaimTemplateName` (a claim of the pod's own)"
    )
