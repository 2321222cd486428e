"""The overlay patches are RFC 6902 JSON Patches: a real implementation applies them.

Found by mutation testing (`make mutation`): removing the `remove` operation, breaking the
RFC 6901 escaping of `~` and `/` in keys, or replacing lists that shrink wrongly passed the
suite, because the shipped overlays never remove a key or patch a key holding `~`. kustomize
applies these patches with an RFC 6902 implementation (evanphx/json-patch); here
python-json-patch does, and the result must be the cluster's object, whatever the shapes.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.tools import require_module
from trainops.render.patch import diff

jsonpatch = require_module("jsonpatch")

CASES: list[tuple[str, Any, Any]] = [
    ("equal", {"a": [1, {"b": 2}]}, {"a": [1, {"b": 2}]}),
    ("key-added", {"a": 1}, {"a": 1, "b": {"c": 2}}),
    ("key-removed", {"a": 1, "b": 2, "c": 3}, {"b": 2}),
    ("nested-change", {"spec": {"x": {"y": 1, "z": 2}}}, {"spec": {"x": {"y": 5, "z": 2}}}),
    # RFC 6901: `~` is written `~0` and `/` is written `~1` (annotation keys hold `/`).
    (
        "escaped-keys",
        {"metadata": {"annotations": {"a/b": "1", "c~d": "2", "~1": "3"}}},
        {"metadata": {"annotations": {"a/b": "9", "c~d": "8", "e/~f": "7"}}},
    ),
    ("list-grows", {"env": [{"name": "A"}]}, {"env": [{"name": "A"}, {"name": "B"}]}),
    ("list-item-changes", {"env": [{"name": "A", "value": "1"}]}, {"env": [{"name": "A"}]}),
    ("list-shrinks", {"env": [1, 2, 3]}, {"env": [1]}),
    ("list-to-dict", {"x": [1, 2]}, {"x": {"a": 1}}),
    ("dict-to-list", {"x": {"a": 1}}, {"x": [1, 2]}),
    ("dict-to-scalar", {"x": {"a": 1}}, {"x": "a"}),
    ("scalar-to-dict", {"x": "a"}, {"x": {"a": 1}}),
    ("list-of-lists", {"x": [[1], [2, 3]]}, {"x": [[1, 4], [2], [5]]}),
]


@pytest.mark.parametrize(("base", "target"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_the_patch_applied_by_a_real_rfc6902_implementation_gives_the_target(
    base: Any, target: Any
) -> None:
    ops = diff(copy.deepcopy(base), copy.deepcopy(target))
    assert jsonpatch.apply_patch(base, ops) == target
    assert (ops == []) == (base == target)


def test_keys_are_escaped_as_rfc6901_says() -> None:
    ops = diff({"a/b": 1, "c~d": 1}, {"a/b": 2})
    assert ops == [
        {"op": "remove", "path": "/c~0d"},
        {"op": "replace", "path": "/a~1b", "value": 2},
    ]
    # `~` first, then `/`: "~1" as a key is "~01", not "~1" (which means "/").
    assert diff({"~1": 1}, {"~1": 2}) == [{"op": "replace", "path": "/~01", "value": 2}]


def test_a_changed_list_item_is_patched_in_place_and_new_items_appended() -> None:
    """patch.py: a target env variable replacing the job's is one `replace .../env/N/value`,
    and a new one one `add .../env/-` (appended), so the rest of the list is left alone."""
    base = {"env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}
    target = {"env": [{"name": "A", "value": "1"}, {"name": "B", "value": "3"}, {"name": "C"}]}
    assert diff(base, target) == [
        {"op": "replace", "path": "/env/1/value", "value": "3"},
        {"op": "add", "path": "/env/-", "value": {"name": "C"}},
    ]


def test_a_shorter_list_is_replaced_whole() -> None:
    """Removing items by index would shift the others; one `replace` states the result."""
    assert diff({"a": [1, 2, 3]}, {"a": [1, 2]}) == [
        {"op": "replace", "path": "/a", "value": [1, 2]}
    ]
    # The same length is not shorter: items change in place.
    a1, a2, a5 = {"n": 1}, {"n": 2}, {"n": 5}
    assert diff({"a": [a1, a2]}, {"a": [a1, a5]}) == [
        {"op": "replace", "path": "/a/1/n", "value": 5}
    ]


def test_operations_are_in_a_stable_order() -> None:
    """Deterministic output: removals first, then keys in sorted order, whatever dict order."""
    base = {"z": 1, "b": 1, "y": 1, "a": 1}
    target = {"c": 2, "a": 2, "d": 2}
    assert diff(base, target) == [
        {"op": "remove", "path": "/b"},
        {"op": "remove", "path": "/y"},
        {"op": "remove", "path": "/z"},
        {"op": "replace", "path": "/a", "value": 2},
        {"op": "add", "path": "/c", "value": 2},
        {"op": "add", "path": "/d", "value": 2},
    ]
