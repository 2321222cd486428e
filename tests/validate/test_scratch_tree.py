"""validate writes the rendered tree kustomize builds to memory-backed scratch space when
there is room: on a disk file system, creating and deleting the 10,200 files of a 500-job
fleet cost 4.2 CPU seconds against 0.3 (docs/validate.md, Performance). The tree, its contents
and what kustomize builds from it are the same wherever it lies."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tools import REPO, require_kustomize
from trainops import build
from trainops.jobspec.load import load_repository
from trainops.validate.repo import validate_repository


@pytest.fixture
def memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A stand-in for /dev/shm (a real directory: only its place is chosen here)."""
    place = tmp_path / "shm"
    place.mkdir()
    monkeypatch.setattr(build, "MEMORY_SCRATCH", place)
    monkeypatch.delenv("TMPDIR", raising=False)
    monkeypatch.setattr(build, "SCRATCH_HEADROOM_BYTES", 0)
    return place


def test_memory_scratch_is_used_when_it_has_room(memory: Path) -> None:
    assert build.scratch_parent(1000) == str(memory)


def test_the_system_temporary_directory_otherwise(
    memory: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(build, "SCRATCH_HEADROOM_BYTES", 1 << 60)
    assert build.scratch_parent(1000) is None
    monkeypatch.setattr(build, "SCRATCH_HEADROOM_BYTES", 0)
    monkeypatch.setenv("TMPDIR", str(memory.parent))
    assert build.scratch_parent(1000) is None
    monkeypatch.delenv("TMPDIR")
    monkeypatch.setattr(build, "MEMORY_SCRATCH", memory / "absent")
    assert build.scratch_parent(1000) is None


def test_scratch_tree_holds_the_files_and_is_gone_after(memory: Path) -> None:
    files = {"base/a/kustomization.yaml": "resources: []\n", "overlays/x/o.yaml": "é: 1\n"}
    with build.scratch_tree(files, "trainops-test-") as tree:
        assert tree.parent == memory
        assert {p: (tree / p).read_text(encoding="utf-8") for p in files} == files
    assert not tree.exists() and list(memory.iterdir()) == []


def test_validate_builds_the_rendered_tree_in_scratch(memory: Path) -> None:
    require_kustomize()
    built_in: list[Path] = []

    def run(directory: Path) -> str:
        built_in.append(directory)
        return build.kustomize(directory)

    repo = load_repository(REPO)
    result = validate_repository(REPO, repo, run=run)
    assert result.resources > 0 and [f for f in result.findings if f.severity == "error"] == []
    assert built_in and all(d.is_relative_to(memory) for d in built_in)
    assert list(memory.iterdir()) == []
