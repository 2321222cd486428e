"""The spec schemas (`trainops/schemas/*.schema.json`): the one source of the specs' shape
and defaults. Editors complete from them, the loader validates against them, and their
`default`s fill what a spec leaves out — the model's dataclass defaults are read from here."""

from __future__ import annotations

import copy
import functools
import json
import marshal
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import jsonschema_rs

from trainops.core import paths

if TYPE_CHECKING:
    import jsonschema

JOB = "trainingjob"
CLUSTER = "clusterprofile"
SETTINGS = "trainops"


@functools.cache
def schema(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((paths.SCHEMA_DIR / f"{name}.schema.json").read_text())
    return loaded


@functools.cache
def validator(name: str) -> jsonschema.Draft202012Validator:
    """The Python validator, whose errors word a spec's problems. Imported here: it is a
    sixth of the start of `trainops validate --manifests`, which reads no spec."""
    import jsonschema  # noqa: PLC0415

    base = jsonschema.Draft202012Validator
    # JSON Schema counts 8.0 as an integer; the model, the renderer and every consumer of a
    # count (`gpusPerReplica: 8.0`, `parameters: 1.3e+10`) want an int: a float is refused.
    strict = base.TYPE_CHECKER.redefine("integer", _is_int)
    return jsonschema.validators.extend(base, type_checker=strict)(schema(name))


def _is_int(_checker: object, instance: object) -> bool:
    return isinstance(instance, int) and not isinstance(instance, bool)


def _has_whole_float(data: Any) -> bool:
    """Whether `data` holds a float with no fraction (`8.0`), which jsonschema-rs would pass
    as an integer (see `validator`)."""
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, float) and item.is_integer():
            return True
    return False


@functools.cache
def _fast_validator(name: str) -> jsonschema_rs.Validator:
    return jsonschema_rs.validator_for(schema(name), validate_formats=False)


def surely_valid(name: str, data: Any) -> bool:
    """True when jsonschema-rs finds `data` valid against schema `name`: loading a spec then
    skips the Python validator, which takes ten times as long (half of loading 500 job specs)
    and is needed only to word the errors of a spec that has some.

    The two agree on every spec that the tests, the shipped repository and
    `tests/jobspec/test_fast_schema.py`'s seeded mutations of them hold. Where they could differ,
    the Rust side is the stricter one (a pattern's `$` does not match before a final newline, as
    Python's does), so a spec it refuses is judged again by the Python validator, whose verdict
    stands; a value it cannot read (False) goes the same way.
    """
    if _has_whole_float(data):
        return False
    try:
        return bool(_fast_validator(name).is_valid(data))
    except (ValueError, TypeError, OverflowError):
        return False


# `_resolve`'s answer per schema node (by identity; the schemas are loaded once and never
# changed, and each entry keeps its node alive): loading 500 job specs resolved the same
# few hundred `$ref`s 100,000 times.
_RESOLVED: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}


def _resolve(node: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    known = _RESOLVED.get(id(node))
    if known is not None and known[0] is node:
        return known[1]
    resolved = node
    while "$ref" in resolved:
        target = root["$defs"][resolved["$ref"].rsplit("/", 1)[1]]
        resolved = {**target, **{k: v for k, v in resolved.items() if k != "$ref"}}
    _RESOLVED[id(node)] = (node, resolved)
    return resolved


_SCALARS = (str, int, float, bool, type(None))


def _copy(value: Any, memo: dict[int, Any]) -> Any:
    """`copy.deepcopy` for JSON data (dicts, lists, scalars), several times faster: a
    container met twice (a YAML alias) is copied once and shared, as deepcopy shares it."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is dict or kind is list:
        done = memo.get(id(value))
        if done is None:
            if kind is dict:
                done = memo[id(value)] = {}
                for key, item in value.items():
                    done[key] = _copy(item, memo)
            else:
                done = memo[id(value)] = []
                done.extend([_copy(item, memo) for item in value])
        return done
    return copy.deepcopy(value, memo)


_NO_DEFAULT = object()


@dataclass(frozen=True)
class _Plan:
    """What `_fill` does at one schema node, worked out once: the properties' defaults, and
    the schemas of the properties, other keys and list items under which some default lies
    (a subtree without one, such as a pod template's, is not walked)."""

    defaults: tuple[tuple[str, Any], ...]
    properties: tuple[tuple[str, dict[str, Any]], ...]
    names: frozenset[str]
    extra: dict[str, Any] | None
    items: dict[str, Any] | None


_PLANS: dict[int, tuple[dict[str, Any], _Plan]] = {}
# Whether any default lies at or under a schema node (by identity, as `_RESOLVED`).
_DEFAULTS_UNDER: dict[int, tuple[dict[str, Any], bool]] = {}


def _defaults_under(node: dict[str, Any], root: dict[str, Any], seen: frozenset[int]) -> bool:
    """Whether `_fill` could add anything at or under `node` (a node met again on its own
    path, a recursive `$ref`, counts as yes)."""
    known = _DEFAULTS_UNDER.get(id(node))
    if known is not None and known[0] is node:
        return known[1]
    if id(node) in seen:
        return True
    seen = seen | {id(node)}
    resolved = _resolve(node, root)
    subs = [_resolve(raw, root) for raw in resolved.get("properties", {}).values()]
    found = any("default" in sub for sub in subs) or any(
        _defaults_under(child, root, seen)
        for child in [
            *resolved.get("properties", {}).values(),
            *(resolved.get(key) for key in ("additionalProperties", "items")),
        ]
        if isinstance(child, dict)
    )
    _DEFAULTS_UNDER[id(node)] = (node, found)
    return found


def _plan(node: dict[str, Any], root: dict[str, Any]) -> _Plan:
    known = _PLANS.get(id(node))
    if known is not None and known[0] is node:
        return known[1]
    resolved = _resolve(node, root)
    defaults = []
    properties = []
    for key, raw in resolved.get("properties", {}).items():
        sub = _resolve(raw, root)
        if "default" in sub:
            defaults.append((key, sub["default"]))
        if _defaults_under(raw, root, frozenset()):
            properties.append((key, raw))
    extra, items = resolved.get("additionalProperties"), resolved.get("items")
    plan = _Plan(
        tuple(defaults),
        tuple(properties),
        frozenset(resolved.get("properties", {})),
        extra if isinstance(extra, dict) and _defaults_under(extra, root, frozenset()) else None,
        items if isinstance(items, dict) and _defaults_under(items, root, frozenset()) else None,
    )
    _PLANS[id(node)] = (node, plan)
    return plan


def _fill(data: Any, node: dict[str, Any], root: dict[str, Any]) -> None:
    plan = _plan(node, root)
    if isinstance(data, dict):
        for key, default in plan.defaults:
            if key not in data:
                data[key] = _copy(default, {})
        for key, sub in plan.properties:
            if key in data:
                _fill(data[key], sub, root)
        if plan.extra is not None:
            for key, value in data.items():
                if key not in plan.names:
                    _fill(value, plan.extra, root)
    elif isinstance(data, list) and plan.items is not None:
        for item in data:
            _fill(item, plan.items, root)


def with_defaults(name: str, data: dict[str, Any]) -> dict[str, Any]:
    """A copy of `data` (already valid against the schema) with every schema default filled
    in: a missing key with a `default` gets it, inside the objects that are present. An
    optional block whose schema default is `{}` (e.g. `runPolicy`) is created and filled."""
    try:
        # A spec is JSON data, which marshal copies in C, aliases shared as `_copy` does.
        out: dict[str, Any] = marshal.loads(marshal.dumps(data))
    except ValueError:  # a type marshal does not know (a YAML timestamp)
        out = _copy(data, {})
    _fill(out, schema(name), schema(name))
    return out


def default(name: str, dotted: str) -> Any:
    """The schema's default at `dotted`: `elastic.maxRestarts`, `gpus[].resource`, `volumes.*.x`."""
    root = schema(name)
    node = root
    for part in dotted.replace("[]", ".[]").split("."):
        node = _resolve(node, root)
        if part == "[]":
            node = node["items"]
        elif part == "*":
            node = node["additionalProperties"]
        else:
            node = node["properties"][part]
    return copy.deepcopy(_resolve(node, root)["default"])
