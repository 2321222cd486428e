"""What the kubelet does to a container's env and command before it starts, done here.

Kubernetes resolves `envFrom`, `env[].value` and `env[].valueFrom` in order and then expands
`$(VAR)` in env values (from the variables defined before them) and in `command`/`args` (from
all of them). An undefined `$(VAR)` is left verbatim, not emptied, and `$$` escapes a dollar
(https://kubernetes.io/docs/tasks/inject-data-application/define-interdependent-environment-variables/;
`trainops.kube.words.expand_kubelet`, the expansion every reader shares). The program then
sees the literal text `$(VAR)`, which is what run-local shows happening.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from trainops.kube.words import expand_kubelet


@dataclass
class ResolvedEnv:
    """A container's env as the kubelet would set it, and what could not be resolved here."""

    values: dict[str, str] = field(default_factory=dict)
    unresolved: list[str] = field(default_factory=list)
    """One line per variable or reference that run-local cannot resolve (left unset)."""


def _object_data(obj: dict[str, Any]) -> dict[str, str]:
    """A ConfigMap's or Secret's keys as text (Secret `data` and `binaryData` are base64)."""
    out: dict[str, str] = {}
    if obj.get("kind") == "Secret":
        for key, value in (obj.get("stringData") or {}).items():
            out[key] = str(value)
        for key, value in (obj.get("data") or {}).items():
            out[key] = base64.b64decode(str(value)).decode("utf-8", "replace")
        return out
    for key, value in (obj.get("data") or {}).items():
        out[key] = str(value)
    for key, value in (obj.get("binaryData") or {}).items():
        out[key] = base64.b64decode(str(value)).decode("utf-8", "replace")
    return out


def resolve_env(
    container: dict[str, Any],
    config_maps: Mapping[str, dict[str, Any]],
    secrets: Mapping[str, dict[str, Any]],
    fields: Mapping[str, str],
) -> ResolvedEnv:
    """`envFrom` then `env`, with ConfigMap/Secret references looked up in the built objects.

    `fields` answers `fieldRef` paths (`metadata.name`, `status.podIP`, ...). A reference to
    an object the build does not hold (a Secret created out of band) is reported, not guessed.
    """
    out = ResolvedEnv()
    stores = {"configMap": config_maps, "secret": secrets}
    for source in container.get("envFrom", []):
        prefix = str(source.get("prefix", ""))
        for kind, store in stores.items():
            ref = source.get(f"{kind}Ref")
            if ref is None:
                continue
            obj = store.get(str(ref.get("name")))
            if obj is None:
                if not ref.get("optional"):
                    out.unresolved.append(
                        f"envFrom {kind} {ref.get('name')!r} is not in the built objects"
                    )
                continue
            for key, value in _object_data(obj).items():
                out.values[prefix + key] = value
    for var in container.get("env", []):
        name = str(var["name"])
        if "valueFrom" not in var:
            out.values[name] = expand_kubelet(str(var.get("value", "")), out.values)
            continue
        found = _value_from(name, var["valueFrom"], stores, fields, out.unresolved)
        if found is not None:
            out.values[name] = found
    return out


def _value_from(
    name: str,
    source: dict[str, Any],
    stores: Mapping[str, Mapping[str, dict[str, Any]]],
    fields: Mapping[str, str],
    unresolved: list[str],
) -> str | None:
    for kind in ("configMap", "secret"):
        ref = source.get(f"{kind}KeyRef")
        if ref is None:
            continue
        obj = stores[kind].get(str(ref.get("name")))
        data = _object_data(obj) if obj is not None else {}
        key = str(ref.get("key"))
        if key in data:
            return data[key]
        if not ref.get("optional"):
            where = "is not in the built objects" if obj is None else f"has no key {key!r}"
            unresolved.append(f"{name}: {kind} {ref.get('name')!r} {where}; left unset")
        return None
    field_ref = source.get("fieldRef")
    if field_ref is not None:
        path = str(field_ref.get("fieldPath"))
        if path in fields:
            return fields[path]
        unresolved.append(f"{name}: fieldRef {path} has no local value; left unset")
        return None
    unresolved.append(f"{name}: {', '.join(sorted(source))} is not resolved locally; left unset")
    return None


def volume_files(obj: dict[str, Any], items: list[dict[str, Any]] | None) -> dict[str, str]:
    """Relative path -> content of a ConfigMap/Secret volume (all keys, or the `items` listed)."""
    data = _object_data(obj)
    if not items:
        return dict(data)
    return {str(item["path"]): data[str(item["key"])] for item in items if item["key"] in data}
