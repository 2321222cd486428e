"""No silent skips: every skip in the suite goes through `tests/tools.py`, which fails under CI.

A raw `pytest.skip`, `pytest.importorskip`, `@pytest.mark.skip(if)` or `xfail` skips under
CI=true too, and CI reports green for a test that never ran. This reads every test module's
syntax tree (comments such as `# fmt: skip` are not code, so they do not count) and names
each raw skip with file and line.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
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


SAMPLE = """\
from tests.tools import require_module, require_tool

def test_needs_a_package() -> None:
    require_module("trainops_no_such_package")

def test_needs_a_tool() -> None:
    require_tool("trainops-no-such-tool")
"""


@pytest.mark.parametrize(("ci", "outcome"), [("true", "2 failed"), ("", "2 skipped")])
def test_the_helper_skips_locally_and_fails_under_ci(tmp_path: Path, ci: str, outcome: str) -> None:
    """Run a suite whose tests need what is not there: skipped here, failed under CI=true."""
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-n",
            "0",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:kmock",  # kmock's plugin needs pytest-asyncio; tests/cluster runs it from a thread
            "test_sample.py",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "CI": ci, "PYTHONPATH": str(TESTS.parent)},
        check=False,
    )
    assert outcome in result.stdout, result.stdout + result.stderr
    assert result.returncode == (1 if ci else 0)
