"""Golden tests: the whole rendered tree and the `validate --format json` output, byte for byte.

They pin behaviour across refactors (moving modules must not change one byte of output):
- the shipped repository: its committed `base/`, `overlays/`, `gitops/` are the expected tree,
  and `shipped.validate.json` the expected findings;
- `rich/`: a fixture repository that uses every spec feature at least once; its expected tree
  is `rich.tree.txt` (every file, headed by its path) and its findings `rich.validate.json`.

A change that means to change output regenerates them with
`TRAINOPS_UPDATE_GOLDEN=1 make test PYTEST_ARGS=tests/golden` and commits the diff, which
reviewers then read like any rendered diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.tools import REPO, copy_inputs, trainops, tree

HERE = Path(__file__).parent
RICH = HERE / "rich"
UPDATE = os.environ.get("TRAINOPS_UPDATE_GOLDEN") == "1"
GENERATED = ("base", "overlays", "gitops")


def _rendered(source: Path, dest: Path) -> dict[str, bytes]:
    root = copy_inputs(source, dest)
    result = trainops(root, "render")
    assert result.returncode == 0, result.stderr
    return {path: data for path, data in tree(root).items() if path.startswith(GENERATED)}


def _as_text(files: dict[str, bytes]) -> str:
    return "".join(f"=== {path} ===\n{data.decode()}" for path, data in sorted(files.items()))


def _check(expected_file: Path, actual: str) -> None:
    if UPDATE:
        expected_file.write_text(actual)
    assert expected_file.exists(), (
        f"{expected_file.name} missing: run with TRAINOPS_UPDATE_GOLDEN=1"
    )
    assert actual == expected_file.read_text(), f"{expected_file.name} differs"


def test_shipped_tree_is_the_committed_output(tmp_path: Path) -> None:
    rendered = _rendered(REPO, tmp_path)
    # Only the generated directories are read: `tree(REPO)` read every byte of .venv and
    # .tools as well (torch, DeepSpeed, node_modules), 217 s of `make test-fast` on a busy day.
    committed = {
        f"{top}/{path}": data
        for top in GENERATED
        if (REPO / top).is_dir()
        for path, data in tree(REPO / top).items()
    }
    assert sorted(rendered) == sorted(committed)
    for path, data in rendered.items():
        assert data == committed[path], path


def test_rich_tree(tmp_path: Path) -> None:
    _check(HERE / "rich.tree.txt", _as_text(_rendered(RICH, tmp_path)))


@pytest.mark.parametrize(("source", "expected"), [(REPO, "shipped"), (RICH, "rich")])
def test_validate_json(tmp_path: Path, source: Path, expected: str) -> None:
    root = copy_inputs(source, tmp_path)
    result = trainops(root, "validate", "--format", "json")
    assert result.returncode in {0, 1}, result.stderr
    _check(HERE / f"{expected}.validate.json", result.stdout)
