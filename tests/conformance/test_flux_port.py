"""flux_port.py's dependency reading against fluxcd/pkg's own `TestSort`
(runtime/dependency/sort_test.go at runtime/v0.110.1), and `dependencies` on a cycle that
does not pass through the Kustomization asked about (issue 33: the port missed it)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conformance import flux_port


def _obj(
    namespace: str, name: str, *deps: tuple[str, str]
) -> tuple[tuple[str, str], list[dict[str, str]]]:
    return (namespace, name), [{"namespace": ns, "name": n} for ns, n in deps]


SORT_CASES = [
    pytest.param(
        [_obj("default", "frontend", ("linkerd", "linkerd"), ("default", "backend")),
         _obj("linkerd", "linkerd"), _obj("default", "backend", ("linkerd", "linkerd"))],
        [("linkerd", "linkerd"), ("default", "backend"), ("default", "frontend")], id="simple"),
    pytest.param(
        [_obj("default", "dependency", ("default", "endless")),
         _obj("default", "endless", ("default", "circular")),
         _obj("default", "circular", ("default", "dependency"))],
        "circular dependency detected: default/dependency -> default/endless -> default/circular"
        " -> default/dependency", id="circular dependency"),
    pytest.param(
        [_obj("application", "backend"), ((("application", "frontend")), [{"name": "backend"}])],
        [("application", "backend"), ("application", "frontend")], id="missing namespace"),
    pytest.param(
        [_obj("default", "backend", ("default", "common")),
         _obj("default", "frontend", ("default", "infra")), _obj("default", "common")],
        [("default", "common"), ("default", "backend"), ("default", "infra"),
         ("default", "frontend")], id="dead end"),
    pytest.param(
        [_obj("default", "frontend", ("linkerd", "linkerd"), ("default", "backend"))],
        [("linkerd", "linkerd"), ("default", "backend"), ("default", "frontend")],
        id="vertices not in the input list"),
]  # fmt: skip


@pytest.mark.parametrize(("objects", "expected"), SORT_CASES)
def test_sort(objects: Any, expected: list[tuple[str, str]] | str) -> None:
    if isinstance(expected, str):
        with pytest.raises(ValueError) as raised:
            flux_port.sort(objects)
        assert str(raised.value) == expected
    else:
        assert flux_port.sort(objects) == expected


def _ks(name: str, *deps: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "flux-system"},
            "spec": {"dependsOn": [{"name": d} for d in deps]}}  # fmt: skip


def test_a_cycle_below_is_found() -> None:
    """a -> b -> c -> b: `a` never applies though the cycle does not pass through it."""
    kustomizations = {"a": _ks("a", "b"), "b": _ks("b", "c"), "c": _ks("c", "b")}
    with pytest.raises(ValueError, match="circular dependency detected"):
        flux_port.dependencies(kustomizations, "a")
    fine = {"a": _ks("a", "b"), "b": _ks("b", "c"), "c": _ks("c")}
    assert flux_port.dependencies(fine, "a") == {"b", "c"}
    with pytest.raises(KeyError):
        flux_port.dependencies({"a": _ks("a", "missing")}, "a")
