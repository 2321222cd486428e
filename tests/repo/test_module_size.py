"""No module over 400 lines (test modules: 450), issue 27.

A module past that size has, in this code base, always held two jobs; split it by
responsibility (docs/development.md, "The shape"), not by cutting it at the limit. Lines are
counted as `wc -l` does, blank lines and docstrings included: what a reader scrolls through.
"""

from __future__ import annotations

from pathlib import Path

from tests.tools import REPO

LIMITS = {"trainops": 400, "trainer": 400, "tests": 450}


def line_count(path: Path) -> int:
    return path.read_bytes().count(b"\n")


def oversized(limits: dict[str, int] = LIMITS) -> list[str]:
    """`path: lines (limit)` for every Python module over its package's limit."""
    out = []
    for top, limit in sorted(limits.items()):
        for path in sorted((REPO / top).rglob("*.py")):
            lines = line_count(path)
            if lines > limit:
                out.append(f"{path.relative_to(REPO)}: {lines} lines (limit {limit})")
    return out


def test_the_walk_sees_every_package() -> None:
    for top in LIMITS:
        assert any((REPO / top).rglob("*.py")), f"no Python module under {top}/"


def test_the_walk_finds_a_module_over_a_limit() -> None:
    """The check bites: with a limit below this module's own size, it is listed."""
    this = Path(__file__).resolve().relative_to(REPO)
    assert any(line.startswith(f"{this}:") for line in oversized({"tests": 10}))


def test_no_module_is_over_its_limit() -> None:
    found = oversized()
    assert not found, "split these modules by responsibility:\n" + "\n".join(found)
