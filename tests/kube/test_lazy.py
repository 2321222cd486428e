"""`lazy` computes an attribute once per instance, like functools.cached_property."""

from __future__ import annotations

from trainops.kube.lazy import lazy


class _Counter:
    def __init__(self) -> None:
        self.calls = 0

    @lazy
    def value(self) -> int:
        self.calls += 1
        return 42


def test_computed_once_per_instance() -> None:
    a, b = _Counter(), _Counter()
    assert (a.value, a.value, b.value) == (42, 42, 42)
    assert (a.calls, b.calls) == (1, 1)
    assert isinstance(_Counter.value, lazy)
