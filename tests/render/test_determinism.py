"""Rendering is deterministic across processes: same inputs, byte-identical output.

Determinism must be shown between two interpreters, not by calling one function twice in
one process (where every set and dict iterates the same way both times). Python salts
`str` hashes per process, so set iteration order changes with PYTHONHASHSEED; each render
here runs the CLI in its own process with a different, fixed seed (fixed so a failure
reproduces), into its own directory, and every generated file — base/, overlays/ and
gitops/ (the ApplicationSet, AppProject, Flux objects) — must match byte for byte.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.render.repos import REPOS
from tests.tools import REPO, copy_inputs, tree

GENERATED = ("base/", "overlays/", "gitops/")
# Two seeds under which a set of the five whitelisted kinds, or of a cluster's
# namespaces, iterates in different orders (checked when this test was written by rendering
# with an unsorted set).
SEEDS = ("0", "4242")


def render_with_seed(source: Path, dest: Path, seed: str) -> dict[str, bytes]:
    root = copy_inputs(source, dest)
    result = subprocess.run(
        [sys.executable, "-m", "trainops", "--root", str(root), "render"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONHASHSEED": seed},
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return {k: v for k, v in tree(root).items() if k.startswith(GENERATED)}


@pytest.mark.parametrize("label", sorted(REPOS))
def test_render_is_byte_identical_across_hash_seeds(tmp_path: Path, label: str) -> None:
    first, second = (
        render_with_seed(REPOS[label], tmp_path / f"seed-{seed}", seed) for seed in SEEDS
    )
    assert any(k.startswith("gitops/argocd/applicationset") for k in first)
    assert sorted(first) == sorted(second)
    for path, data in first.items():
        assert data == second[path], f"{path} differs between PYTHONHASHSEED={SEEDS}"
