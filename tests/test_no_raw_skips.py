"""No silent skips: every skip in the suite goes through `tests/tools.py`, which fails under CI.

A raw `pytest.skip`, `pytest.importorskip`, `@pytest.mark.skip(if)` or `xfail` skips under
CI=true too, and CI reports green for a test that never ran. This reads every test module's
syntax tree (comments such as `# fmt: skip` are not code, so they do not count) and names
each raw skip with file and line.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
# The one module allowed to skip: its helpers fail under CI=true.
HELPER = TESTS / "tools.py"
# pytest and unittest spellings of "do not run this test" (or "run it, but do not count it").
SKIPPING = frozenset({"skip", "skipif", "importorskip", "xfail", "SkipTest", "skipTest"})


def raw_skips(source: str, file: str) -> list[str]:
    """`file:line: name` for every use of a skipping name in `source`."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source, file)):
        if isinstance(node, ast.Attribute) and node.attr in SKIPPING:
            found.append(f"{file}:{node.lineno}: .{node.attr}")
        elif isinstance(node, ast.Name) and node.id in SKIPPING:
            found.append(f"{file}:{node.lineno}: {node.id}")
        elif isinstance(node, ast.ImportFrom):
            found += [
                f"{file}:{node.lineno}: from {node.module} import {alias.name}"
                for alias in node.names
                if alias.name in SKIPPING
            ]
    return found


def test_no_test_skips_outside_the_helper() -> None:
    modules = sorted(p for p in TESTS.rglob("*.py") if p != HELPER)
    assert len(modules) > 20, "the scan found the test suite"
    found = [
        hit
        for path in modules
        for hit in raw_skips(path.read_text(encoding="utf-8"), str(path.relative_to(TESTS)))
    ]
    assert not found, (
        "skip through tests/tools.py (skip_or_fail, require_tool, require_module, "
        f"require_shared), which fails under CI=true: {found}"
    )


@pytest.mark.parametrize(
    "source",
    [
        "import pytest\npytest.skip('no lupa', allow_module_level=True)\n",
        "import pytest\ntorch = pytest.importorskip('torch')\n",
        "import pytest\n@pytest.mark.skipif(True, reason='x')\ndef test_x() -> None: ...\n",
        "import pytest\n@pytest.mark.xfail\ndef test_x() -> None: ...\n",
        "from pytest import skip\nskip('x')\n",
        "import unittest\nraise unittest.SkipTest('x')\n",
    ],
)
def test_the_scan_finds_each_kind_of_raw_skip(source: str) -> None:
    assert raw_skips(source, "sample.py")


def test_the_scan_ignores_formatter_comments() -> None:
    assert raw_skips("x = [1, 2]  # fmt: skip\n", "sample.py") == []
