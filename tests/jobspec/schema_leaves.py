"""The leaf fields of trainops' own JSON Schemas, found by walking the schemas (no hand-kept
list): what tests/jobspec/test_field_coverage.py changes one at a time."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import Any

from trainops.core import paths


def resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        target = root["$defs"][schema["$ref"].rsplit("/", 1)[1]]
        schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


def leaves(schema: dict[str, Any], root: dict[str, Any], path: str = "") -> Iterator[str]:
    """Dotted paths of every leaf: `[]` is any list item, `*` any key of a map."""
    schema = resolve(schema, root)
    items = schema.get("items")
    extra = schema.get("additionalProperties")
    if "properties" in schema:
        for key, sub in schema["properties"].items():
            yield from leaves(sub, root, f"{path}.{key}" if path else key)
    elif isinstance(items, dict) and "properties" in resolve(items, root):
        yield from leaves(items, root, f"{path}[]")
    elif isinstance(extra, dict) and (
        "properties" in resolve(extra, root) or "enum" in resolve(extra, root)
    ):
        yield from leaves(extra, root, f"{path}.*")
    else:
        yield path


def schema_named(name: str) -> dict[str, Any]:
    return dict(json.loads((paths.SCHEMA_DIR / f"{name}.schema.json").read_text()))


def schema_at(name: str, dotted: str) -> dict[str, Any]:
    root = schema_named(name)
    node = root
    for token in tokens(dotted):
        node = resolve(node, root)
        if token == "[]":
            node = node["items"]
        elif token == "*":
            node = node["additionalProperties"]
        else:
            node = node["properties"][token]
    return resolve(node, root)


def tokens(dotted: str) -> list[str]:
    return [t for t in re.split(r"\.|(\[\])", dotted) if t]


def all_leaves(names: Iterable[str]) -> list[str]:
    """`schema:dotted.path` of every leaf of the named schemas, sorted."""
    return sorted(f"{n}:{leaf}" for n in names for leaf in leaves(schema_named(n), schema_named(n)))
