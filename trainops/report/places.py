"""Where a finding told at its spec line was found: a few words for the text formats, SARIF's
related locations for code scanning."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from trainops.core.findings import Finding, Location


def _and(items: Sequence[str]) -> str:
    """`a`, `a and b`, `a, b and c`."""
    return " and ".join([", ".join(items[:-1]), items[-1]] if len(items) > 2 else items)


def where(f: Finding) -> str:
    """Where a finding moved to its spec line was found, in few words: `PyTorchJob
    resnet50-ddp on cloud-h100 and onprem-a100, Master and Worker; TrainJob resnet50-ddp on
    onprem-h200, node`."""
    parts: dict[tuple[str, str], dict[str, set[str]]] = {}
    for r in f.related:
        on = parts.setdefault((r.kind or "?", r.name or "?"), {})
        on.setdefault(r.cluster or "", set()).update([r.replica_type] if r.replica_type else [])
    # The clusters where an object has the same replica types, then the objects alike.
    alike: dict[tuple[str, tuple[str, ...], tuple[str, ...]], list[str]] = {}
    for (kind, name), on in parts.items():
        by_types: dict[tuple[str, ...], list[str]] = {}
        for cluster, found in sorted(on.items()):
            by_types.setdefault(tuple(sorted(found)), []).append(cluster)
        for replica_types, clusters in by_types.items():
            key = (kind, tuple(c for c in clusters if c), replica_types)
            alike.setdefault(key, []).append(name)
    texts = []
    for (kind, on_clusters, replica_types), names in alike.items():
        text = f"{kind} {_and(sorted(set(names)))}"
        text += f" on {_and(list(on_clusters))}" if on_clusters else ""
        texts.append(text + (f", {_and(list(replica_types))}" if replica_types else ""))
    return "; ".join(texts)


def sarif_related(f: Finding) -> dict[str, Any]:
    """SARIF 2.1.0 (3.27.22) `relatedLocations` of a result: where in the generated files the
    finding was found; nothing for a finding without them."""
    if not f.related:
        return {}
    return {"relatedLocations": [_sarif_location(i, r) for i, r in enumerate(f.related)]}


def _sarif_location(index: int, r: Location) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": {"uri": r.file}}
    if r.line:
        physical["region"] = {"startLine": r.line}
    text = f"{r.kind}/{r.name}" + (f" @{r.cluster}" if r.cluster else "")
    text += f" ({r.replica_type})" if r.replica_type else ""
    return {"id": index, "message": {"text": text}, "physicalLocation": physical}


def related_from_json(f: dict[str, Any]) -> tuple[Location, ...]:
    """The related locations of a JSON finding (`trainops validate --format json`)."""
    return tuple(Location.from_dict(r) for r in f.get("relatedLocations") or ())
