"""The overlay's JSON patches: items inserted between the base's (the cluster's NCCL env before
a variable the escape hatch appends) become one `add` at each index, applied in order; the
real kustomize applying them is the kustomize invariant's job (test_kustomize_invariant.py)."""

from __future__ import annotations

from typing import Any

from trainops.render.patch import diff


def _apply(doc: list[Any], ops: list[dict[str, Any]]) -> list[Any]:
    """RFC 6902 `add`/`replace` on a top-level list, in order, as kustomize applies them."""
    out = list(doc)
    for op in ops:
        index = op["path"].lstrip("/")
        if index == "-":
            out.append(op["value"])
        elif op["op"] == "add":
            out.insert(int(index), op["value"])
        else:
            out[int(index)] = op["value"]
    return out


def test_insertions_between_the_base_items_are_adds_at_their_index() -> None:
    base = [{"name": "A"}, {"name": "HATCH"}]
    target = [{"name": "A"}, {"name": "N1"}, {"name": "N2"}, {"name": "HATCH"}]
    ops = diff(base, target)
    assert ops == [
        {"op": "add", "path": "/1", "value": {"name": "N1"}},
        {"op": "add", "path": "/2", "value": {"name": "N2"}},
    ]
    assert _apply(base, ops) == target


def test_appends_and_in_place_changes_stay_as_they_were() -> None:
    a, b, c = {"name": "a"}, {"name": "b"}, {"name": "c"}
    assert diff([a, b], [a, b, c]) == [{"op": "add", "path": "/-", "value": c}]
    b5 = {"name": "b", "value": "5"}
    changed = diff([a, b], [a, b5, c])
    assert changed == [
        {"op": "add", "path": "/1/value", "value": "5"},
        {"op": "add", "path": "/-", "value": c},
    ]


def test_a_list_of_scalars_is_replaced_whole() -> None:
    """An argv (an MPI Launcher's mpirun args differ per cluster) reads as the command it is."""
    assert diff([1, 2], [1, 2, 3]) == [{"op": "replace", "path": "", "value": [1, 2, 3]}]
