"""`schemas.with_defaults` against a plain reading of what it promises (issue 39 made it walk
only the parts of a spec under which the schema holds a default, and copy the spec with
marshal): every spec the repository and the tests' fixtures hold, filled both ways."""

from __future__ import annotations

import copy
import datetime
from typing import Any

import pytest
import yaml

from tests.tools import REPO
from trainops.jobspec import schemas

SPEC_FOLDERS = [REPO / "jobs", REPO / "clusters", REPO / "tests" / "golden" / "rich" / "jobs"]
SPEC_FOLDERS += [REPO / "tests" / "golden" / "rich" / "clusters"]
KINDS = {"TrainingJob": schemas.JOB, "ClusterProfile": schemas.CLUSTER}


def _resolve(node: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        target = root["$defs"][node["$ref"].rsplit("/", 1)[1]]
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def reference_fill(data: Any, node: dict[str, Any], root: dict[str, Any]) -> None:
    """Every property's default where the key is missing, inside every object present, the
    whole tree walked."""
    node = _resolve(node, root)
    if isinstance(data, dict):
        properties = node.get("properties", {})
        for key, raw in properties.items():
            sub = _resolve(raw, root)
            if key not in data and "default" in sub:
                data[key] = copy.deepcopy(sub["default"])
            if key in data:
                reference_fill(data[key], sub, root)
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            for key, value in data.items():
                if key not in properties:
                    reference_fill(value, extra, root)
    elif isinstance(data, list) and isinstance(node.get("items"), dict):
        for item in data:
            reference_fill(item, node["items"], root)


def _specs() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for folder in SPEC_FOLDERS:
        for path in sorted(folder.glob("*.yaml")):
            data = yaml.safe_load(path.read_text())
            if isinstance(data, dict) and data.get("kind") in KINDS:
                out.append((str(path.relative_to(REPO)), data))
    return out


SPECS = _specs()


def test_the_fixtures_hold_specs_of_both_kinds() -> None:
    assert {data["kind"] for _, data in SPECS} == set(KINDS)
    assert len(SPECS) >= 15


@pytest.mark.parametrize(("name", "data"), SPECS, ids=[name for name, _ in SPECS])
def test_defaults_fill_as_the_plain_reading_does(name: str, data: dict[str, Any]) -> None:
    kind = KINDS[data["kind"]]
    expected = copy.deepcopy(data)
    reference_fill(expected, schemas.schema(kind), schemas.schema(kind))
    before = copy.deepcopy(data)
    filled = schemas.with_defaults(kind, data)
    assert filled == expected
    assert data == before, "the spec as written is left alone"


def _containers(value: Any) -> list[Any]:
    found = [value] if isinstance(value, dict | list) else []
    if isinstance(value, dict):
        children = list(value.values())
    else:
        children = value if isinstance(value, list) else []
    return found + [c for child in children for c in _containers(child)]


def test_the_filled_spec_shares_no_container_with_the_spec() -> None:
    _, data = next((n, d) for n, d in SPECS if d["kind"] == "TrainingJob" and "podTemplate" in d)
    filled = schemas.with_defaults(schemas.JOB, data)
    written = {id(c) for c in _containers(data)}
    assert not written & {id(c) for c in _containers(filled)}


def test_a_value_marshal_cannot_copy_is_copied_the_slow_way() -> None:
    """PyYAML reads an unquoted date as a `datetime.date` (a label value written by hand)."""
    data = {"name": "x", "labels": {"since": datetime.date(2026, 11, 29)}, "volumes": {}}
    filled = schemas.with_defaults(schemas.JOB, data)
    assert filled["labels"] == {"since": datetime.date(2026, 11, 29)}
    assert filled["labels"] is not data["labels"]
    assert "runPolicy" in filled


def test_a_recursive_schema_fills_at_every_level() -> None:
    """A `$ref` cycle (a tree of nodes) counts as holding defaults all the way down."""
    root: dict[str, Any] = {
        "$defs": {
            "node": {
                "type": "object",
                "properties": {"child": {"$ref": "#/$defs/node"}, "size": {"default": 1}},
            }
        },
        "$ref": "#/$defs/node",
    }
    data: dict[str, Any] = {"child": {"child": {}}}
    schemas._fill(data, root, root)
    assert data == {"size": 1, "child": {"size": 1, "child": {"size": 1}}}


def test_a_subtree_without_defaults_is_not_walked(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pod template escape hatch holds no schema default: filling does not descend into
    it (the walk that made loading 5,000 specs slow), and what it holds is copied as is."""
    visited: list[int] = []
    real = schemas._fill

    def spy(data: Any, node: dict[str, Any], root: dict[str, Any]) -> None:
        visited.append(id(data))
        real(data, node, root)

    monkeypatch.setattr(schemas, "_fill", spy)
    template = {"spec": {"containers": [{"name": "x", "env": [{"name": "A", "value": "1"}]}]}}
    filled = schemas.with_defaults(schemas.JOB, {"podTemplate": template, "volumes": {}})
    assert filled["podTemplate"] == template
    assert visited, "the spec itself is walked"
    inside = {id(c) for c in _containers(filled["podTemplate"])}
    assert not inside & set(visited)
