"""The escape hatch import writes: what an original pod template has that the rendered one
lacks or says otherwise, as the smallest override `trainops.render.overrides.merge` turns
the rendered template back into the original with. What the rendered template has beyond
the original cannot be taken away by an override: those paths are returned too, so import
can name them (they are trainops's guarantees, or defaults made explicit)."""

from __future__ import annotations

import copy
from typing import Any

from trainops.render.overrides import REPLACED_LISTS, resolve_schema

_MISSING = object()


def same(a: Any, b: Any) -> bool:
    """Equal as Kubernetes reads them: `4` and `"4"` are one quantity."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float, str)) and isinstance(b, (int, float, str)):
        return str(a) == str(b)
    return bool(a == b)


def override(
    original: Any,
    rendered: Any,
    *,
    node: dict[str, Any] | None = None,
    name: str = "",
    path: str = "",
    extra: list[str] | None = None,
) -> Any:
    """What to merge into `rendered` to get `original` (`_MISSING`: nothing); the paths
    `rendered` has beyond `original` are appended to `extra`."""
    extra = extra if extra is not None else []
    node = resolve_schema(node)
    if same(original, rendered):
        return _MISSING
    if isinstance(original, dict) and isinstance(rendered, dict):
        out: dict[str, Any] = {}
        props = node.get("properties", {})
        more = node.get("additionalProperties")
        for key, value in original.items():
            sub = props.get(key, more if isinstance(more, dict) else {})
            if key not in rendered:
                out[key] = copy.deepcopy(value)
                continue
            got = override(
                value, rendered[key], node=sub, name=key, path=f"{path}.{key}", extra=extra
            )
            if got is not _MISSING:
                out[key] = got
        extra += [f"{path}.{key}" for key in rendered if key not in original]
        return out if out else _MISSING
    if isinstance(original, list) and isinstance(rendered, list) and name not in REPLACED_LISTS:
        key = node.get("x-kubernetes-patch-merge-key")
        if key:
            items = node.get("items", {})
            out_list = []
            for item in original:
                match = next(
                    (
                        r
                        for r in rendered
                        if isinstance(r, dict)
                        and isinstance(item, dict)
                        and r.get(key) == item.get(key)
                    ),
                    None,
                )
                if match is None:
                    out_list.append(copy.deepcopy(item))
                    continue
                got = override(
                    item, match, node=items, path=f"{path}[{key}={item.get(key)}]", extra=extra
                )
                if got is not _MISSING:
                    out_list.append({key: item[key], **got})
            theirs = {item.get(key) for item in original if isinstance(item, dict)}
            extra += [
                f"{path}[{key}={r.get(key)}]"
                for r in rendered
                if isinstance(r, dict) and r.get(key) not in theirs
            ]
            return out_list if out_list else _MISSING
        # Appended lists: what the original has beyond ours.
        added = [copy.deepcopy(o) for o in original if not any(same(o, r) for r in rendered)]
        extra += [
            f"{path}[{i}]" for i, r in enumerate(rendered) if not any(same(o, r) for o in original)
        ]
        return added if added else _MISSING
    return copy.deepcopy(original)


def template_override(
    original: dict[str, Any], rendered: dict[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """(override for a PodTemplateSpec, paths trainops adds beyond the original)."""
    extra: list[str] = []
    got = override(original, rendered, extra=extra)
    return ({} if got is _MISSING else got), extra
