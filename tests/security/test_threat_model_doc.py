"""docs/security.md's threat model names, on every line, the test that proves it (issue 29:
"each line with the test that proves it"). A renamed or deleted test would leave the line
claiming a proof that no longer runs: every test the section names must be one pytest
collects (with a parameter pattern, at least one of its cases), every file it names must
exist.

How the doc writes them: `file.py::test_name[params]` (a bare file is in tests/security/),
`::test_name` (the file named before it on the line), `tests/...` paths, and a bare file name
after a path (in that path's folder)."""

from __future__ import annotations

import fnmatch
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.tools import REPO

DOC = REPO / "docs" / "security.md"
SECTION = "## Threat model per actor"
TICKED = re.compile(r"`([^`]+)`")


def _rows() -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index(SECTION) :]
    rest = section[len(SECTION) :]
    end = rest.find("\n## ")
    body = rest if end < 0 else rest[:end]
    return [line for line in body.splitlines() if line.startswith("| ") and "---" not in line]


def _refs(row: str) -> tuple[list[tuple[str, str]], list[str]]:
    """(test file, test pattern) pairs and plain paths named in the row's last cell."""
    cell = row.rstrip(" |").rsplit(" | ", 1)[-1]
    tests: list[tuple[str, str]] = []
    paths: list[str] = []
    current_file = ""
    current_dir = ""
    for ref in TICKED.findall(cell):
        if "::" in ref:
            file, name = ref.split("::", 1)
            if file:
                current_file = file if "/" in file else f"tests/security/{file}"
            tests.append((current_file, name))
        elif ref.startswith("tests/"):
            paths.append(ref)
            current_dir = str(Path(ref).parent)
        elif ref.endswith((".yaml", ".py")) and current_dir:
            paths.append(f"{current_dir}/{ref}")
    return tests, paths


def _collected(files: set[str]) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         *sorted(files)],
        cwd=REPO, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    return [line for line in result.stdout.splitlines() if "::" in line]


@pytest.mark.slow
def test_every_test_the_threat_model_names_exists() -> None:
    rows = _rows()
    assert len(rows) > 20, "the threat model's tables were not found"
    tests: list[tuple[str, str]] = []
    paths: list[str] = []
    for row in rows:
        found_tests, found_paths = _refs(row)
        tests += found_tests
        paths += found_paths
    assert len(tests) > 30
    missing_paths = [p for p in paths if not (REPO / p).exists()]
    assert not missing_paths, missing_paths
    ids = _collected({file for file, _ in tests})
    missing = []
    for file, name in tests:
        node = f"{file}::{name}"
        if "[" in name:  # a parameter pattern: `*` is a wildcard, brackets are literal
            glob = "".join({"[": "[[]", "]": "[]]"}.get(c, c) for c in node)
            matched = [i for i in ids if fnmatch.fnmatchcase(i, glob)]
        else:
            matched = [i for i in ids if i == node or i.startswith(f"{node}[")]
        if not matched:
            missing.append(node)
    assert not missing, missing


def test_the_reader_of_the_doc_bites() -> None:
    """The parser itself: a row's refs, a bare `::name` after a file, a bare fixture name."""
    row = (
        "| x | `test_a.py::test_one[*-p]`, `::test_two`, `tests/rules/fixtures/r/fail.yaml`,"
        " `pass.yaml` |"
    )
    tests, paths = _refs(row)
    assert tests == [
        ("tests/security/test_a.py", "test_one[*-p]"),
        ("tests/security/test_a.py", "test_two"),
    ]
    assert paths == ["tests/rules/fixtures/r/fail.yaml", "tests/rules/fixtures/r/pass.yaml"]
