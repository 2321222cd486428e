"""The spec schemas (`trainops/schemas/*.schema.json`): the one source of the specs' shape
and defaults. Editors complete from them, the loader validates against them, and their
`default`s fill what a spec leaves out — the model's dataclass defaults are read from here."""

from __future__ import annotations

import copy
import functools
import json
from typing import Any

import jsonschema
import jsonschema_rs

from trainops.core import paths

JOB = "trainingjob"
CLUSTER = "clusterprofile"
SETTINGS = "trainops"


@functools.cache
def schema(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((paths.SCHEMA_DIR / f"{name}.schema.json").read_text())
    return loaded


@functools.cache
def validator(name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(schema(name))


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
    try:
        return bool(_fast_validator(name).is_valid(data))
    except (ValueError, TypeError, OverflowError):
        return False


def _resolve(node: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        target = root["$defs"][node["$ref"].rsplit("/", 1)[1]]
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def _fill(data: Any, node: dict[str, Any], root: dict[str, Any]) -> None:
    node = _resolve(node, root)
    if isinstance(data, dict):
        for key, raw in node.get("properties", {}).items():
            sub = _resolve(raw, root)
            if key not in data and "default" in sub:
                data[key] = copy.deepcopy(sub["default"])
            if key in data:
                _fill(data[key], sub, root)
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            for key, value in data.items():
                if key not in node.get("properties", {}):
                    _fill(value, extra, root)
    elif isinstance(data, list) and isinstance(node.get("items"), dict):
        for item in data:
            _fill(item, node["items"], root)


def with_defaults(name: str, data: dict[str, Any]) -> dict[str, Any]:
    """A copy of `data` (already valid against the schema) with every schema default filled
    in: a missing key with a `default` gets it, inside the objects that are present. An
    optional block whose schema default is `{}` (e.g. `runPolicy`) is created and filled."""
    out = copy.deepcopy(data)
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
