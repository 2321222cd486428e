"""Built (Git) vs live (cluster) objects, ignoring what the cluster adds by itself.

What Git does not set is not compared: status, managed fields, uid, resourceVersion,
the defaults the API server fills in (restartPolicy, terminationMessagePath, ...), what
operators and admission webhooks stamp (Kueue's `suspend`, Argo CD's tracking
annotation, Flux's labels). The live object is projected onto the shape of the built
one: keys Git sets are kept, everything else dropped; named lists (containers, env,
volumes, ports) match by `name`. Quantities the API server canonicalises (`1Gi` and
`1073741824`, `1000m` and `1`) compare by value. What is left differs for real.

A TrainJob's `runtimePatches` match by `manager`: the entries other managers own (Kueue
writes its flavor's node selectors in its own) are theirs, not compared, and the `time` the
Trainer's webhook stamps on every entry is not in Git, so it is dropped like any stamp.

Not seen: a field Git stopped setting that is still set on the cluster (the projection
keeps only keys Git has). Argo CD and Flux remove those on their next server-side apply.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any

from trainops.core import yaml_dump
from trainops.facts.quantity import parse_quantity

# Under these keys values are resource quantities, which the API server may rewrite.
_QUANTITY_PARENTS = {"requests", "limits", "capacity"}
HIDDEN = "<hidden>"
# List maps whose entries belong to whoever wrote them (a TrainJob's runtimePatches).
OWNED_BY_KEY = "manager"


def project(desired: Any, live: Any, path: Sequence[str | int] = ()) -> Any:
    """`live` cut down to the fields `desired` sets (values from `live`)."""
    if isinstance(desired, dict) and isinstance(live, dict):
        return {k: project(v, live[k], (*path, k)) for k, v in desired.items() if k in live}
    if isinstance(desired, list) and isinstance(live, list):
        key = _list_key(desired, live)
        if key is not None:
            by_key = {item[key]: item for item in live}
            wanted = [item[key] for item in desired]
            out = [
                project(item, by_key[item[key]], (*path, i))
                for i, item in enumerate(desired)
                if item[key] in by_key
            ]
            if key == OWNED_BY_KEY:
                return out
            return out + [item for item in live if item[key] not in wanted]
        head = [
            project(d, v, (*path, i)) for i, (d, v) in enumerate(zip(desired, live, strict=False))
        ]
        return head + live[len(desired) :]
    if _same_leaf(desired, live, path):
        return desired
    return live


def _keyed(items: list[Any], key: str) -> bool:
    return bool(items) and all(isinstance(i, dict) and isinstance(i.get(key), str) for i in items)


def _list_key(desired: list[Any], live: list[Any]) -> str | None:
    """The key both lists are list maps by, if any."""
    for key in ("name", OWNED_BY_KEY):
        if _keyed(desired, key) and _keyed(live, key):
            return key
    return None


def _same_leaf(desired: Any, live: Any, path: Sequence[str | int]) -> bool:
    if desired == live and type(desired) is type(live):
        return True
    if any(p in _QUANTITY_PARENTS for p in path if isinstance(p, str)):
        a, b = parse_quantity(desired), parse_quantity(live)
        return a is not None and b is not None and abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1)
    return False


def comparable(obj: dict[str, Any]) -> dict[str, Any]:
    """An object without status, with Secret values hidden (a diff is printed in CI logs)."""
    out = {k: v for k, v in obj.items() if k != "status"}
    if out.get("kind") == "Secret" and out.get("apiVersion") == "v1":
        for key in ("data", "stringData"):
            if isinstance(out.get(key), dict):
                out[key] = {k: HIDDEN for k in out[key]}
    return out


def live_view(desired: dict[str, Any], live: dict[str, Any]) -> dict[str, Any]:
    """The live object as it compares with `desired`."""
    projected: dict[str, Any] = project(comparable(desired), comparable(live))
    return projected


def differs(desired: dict[str, Any], live: dict[str, Any]) -> bool:
    return live_view(desired, live) != comparable(desired)


def unified_diff(
    desired: dict[str, Any], live: dict[str, Any] | None, git_label: str, live_label: str
) -> str:
    """`-` what the cluster has, `+` what Git builds (like `kubectl diff`); '' when equal.

    A `live` of None is an object Git has and the cluster does not: all `+`.
    """
    want = yaml_dump.dump(comparable(desired))
    have = "" if live is None else yaml_dump.dump(live_view(desired, live))
    if want == have:
        return ""
    lines = difflib.unified_diff(
        have.splitlines(keepends=True),
        want.splitlines(keepends=True),
        fromfile=live_label,
        tofile=git_label,
    )
    return "".join(lines)
