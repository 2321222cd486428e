"""`render_in_parts` hands validate the repository a cluster at a time, so that a cluster's
overlay builds while the next parts render: each cluster's part, with the parts before it,
must hold every file its `kustomize build` reads, and the parts together are exactly
`render_repository`'s files (each base rendered once)."""

from __future__ import annotations

from pathlib import Path

from tests.tools import REPO, require_kustomize
from trainops import build
from trainops.jobspec.load import load_repository
from trainops.render import render_in_parts, render_repository


def test_the_parts_are_the_repository_each_file_once() -> None:
    repo = load_repository(REPO)
    parts = list(render_in_parts(repo))
    assert [name for name, _ in parts] == [*repo.clusters, None]
    paths = [path for _, files in parts for path in files]
    assert len(paths) == len(set(paths)), "a file rendered in two parts"
    merged = {path: text for _, files in parts for path, text in files.items()}
    assert merged == render_repository(repo)


def test_each_overlay_builds_from_the_parts_so_far(tmp_path: Path) -> None:
    require_kustomize()
    repo = load_repository(REPO)
    whole = tmp_path / "whole"
    build.write_tree(render_repository(repo), whole)
    so_far = tmp_path / "so-far"
    for name, files in render_in_parts(repo):
        build.write_tree(files, so_far)
        if name is not None:
            overlay = Path(build.paths.OVERLAYS_DIR) / name
            assert build.kustomize(so_far / overlay) == build.kustomize(whole / overlay), name
