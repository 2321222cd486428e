"""Every property of the spec schemas says what it is for.

The schemas are the one source of the specs' docs: editors show each `description` on hover and
in completion (the `$schema` line of every job and profile), so a property without one is a
field a user has to guess. A property that is only a `$ref` takes its definition's description.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from trainops.core import paths

# The spec schemas people write against (deepspeed.schema.json is generated from DeepSpeed's
# own classes, whose docs are DeepSpeed's).
SPEC_NAMES = ("trainingjob", "clusterprofile", "trainops")
SPEC_SCHEMAS = [paths.SCHEMA_DIR / f"{name}.schema.json" for name in SPEC_NAMES]


def _undocumented(node: Any, where: str, defs: dict[str, Any]) -> Iterator[str]:
    if isinstance(node, dict):
        for name, prop in (node.get("properties") or {}).items():
            if isinstance(prop, dict) and not _described(prop, defs):
                yield f"{where}.{name}"
        for key, child in node.items():
            yield from _undocumented(child, f"{where}/{key}", defs)
    elif isinstance(node, list):
        for index, child in enumerate(node):
            yield from _undocumented(child, f"{where}[{index}]", defs)


def _described(prop: dict[str, Any], defs: dict[str, Any]) -> bool:
    if "description" in prop:
        return True
    ref = prop.get("$ref", "")
    return ref.startswith("#/$defs/") and "description" in defs.get(ref.split("/")[-1], {})


def test_there_are_spec_schemas() -> None:
    names = {path.name for path in SPEC_SCHEMAS}
    assert {"trainingjob.schema.json", "clusterprofile.schema.json"} <= names


@pytest.mark.parametrize("path", SPEC_SCHEMAS, ids=lambda p: p.name)
def test_every_property_has_a_description(path: Path) -> None:
    schema = json.loads(path.read_text(encoding="utf-8"))
    missing = list(_undocumented(schema, "", schema.get("$defs", {})))
    assert not missing, f"{path.name}: properties without a description: {missing}"
