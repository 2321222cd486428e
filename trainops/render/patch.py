"""JSON Patch (RFC 6902) from a base object to the object a cluster needs.

Overlays are JSON patches rather than strategic-merge patches: kustomize does not
know the merge keys of lists inside custom resources, so a strategic-merge patch
adding one env var to a PyTorchJob container would replace the whole container
list. JSON Patch `add .../env/-` appends and leaves everything else alone.
"""

from __future__ import annotations

from typing import Any


def _pointer(path: list[str | int]) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def _scalars(items: list[Any]) -> bool:
    return all(not isinstance(item, (dict, list)) for item in items)


def diff(base: Any, target: Any, path: list[str | int] | None = None) -> list[dict[str, Any]]:
    """Operations turning `base` into `target`; [] when equal. Deterministic (sorted keys)."""
    path = path or []
    if base == target:
        return []
    if isinstance(base, dict) and isinstance(target, dict):
        ops: list[dict[str, Any]] = []
        for key in sorted(base.keys() - target.keys()):
            ops.append({"op": "remove", "path": _pointer([*path, key])})
        for key in sorted(target):
            if key not in base:
                ops.append({"op": "add", "path": _pointer([*path, key]), "value": target[key]})
            else:
                ops += diff(base[key], target[key], [*path, key])
        return ops
    if isinstance(base, list) and isinstance(target, list) and _scalars(base + target):
        # An argv (an MPI Launcher's mpirun args differ per cluster): one `replace` of the
        # whole list reads as the command it is, not as a run of per-index edits.
        return [{"op": "replace", "path": _pointer(path), "value": target}]
    if isinstance(base, list) and isinstance(target, list) and len(target) >= len(base):
        inserted = _insertions(base, target)
        if inserted:
            # The base's items all kept, in order, with new ones between them (the cluster's
            # NCCL env before an env variable a podTemplate appends): one `add` at each index.
            return [
                {"op": "add", "path": _pointer([*path, i]), "value": target[i]} for i in inserted
            ]
        # Change the items in place, then append: a target env variable replacing the job's
        # becomes one `replace .../env/3/value`, not a restatement of the whole list.
        ops = []
        for i, (b, t) in enumerate(zip(base, target[: len(base)], strict=True)):
            ops += diff(b, t, [*path, i])
        ops += [
            {"op": "add", "path": _pointer([*path, "-"]), "value": item}
            for item in target[len(base) :]
        ]
        return ops
    return [{"op": "replace", "path": _pointer(path), "value": target}]


def _insertions(base: list[Any], target: list[Any]) -> list[int]:
    """Indices of `target` holding items inserted between `base`'s (kept equal and in
    order), when some are not at the end; else [] (append or change in place instead)."""
    added: list[int] = []
    j = 0
    for i, item in enumerate(target):
        if j < len(base) and item == base[j]:
            j += 1
        else:
            added.append(i)
    if j < len(base) or not added or added == list(range(len(base), len(target))):
        return []
    return added
