"""`trainops validate` on a repository: every overlay built, an unknown cluster is usage."""

from __future__ import annotations

import json

import pytest

from tests.tools import REPO, require_tool, require_upstream
from trainops.cli import main


@pytest.mark.slow  # converts every upstream CRD: 153 s of `make test-fast` on a busy day
def test_in_repo_mode_builds_each_overlay(capsys: pytest.CaptureFixture[str]) -> None:
    """Rendered repo, real kustomize, checked against the converted upstream CRDs (`--crds`)
    for every kind they cover; our own schemas alone: test_gitops_kinds.py."""
    require_tool("kubectl")
    crds = str(require_upstream() / "crds")
    assert main(["--root", str(REPO), "validate", "--crds", crds, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["summary"]["resources"] > 0 and out["summary"]["errors"] == 0


def test_unknown_cluster_is_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--root", str(REPO), "validate", "--cluster", "nope"]) == 2
    assert "unknown cluster 'nope'" in capsys.readouterr().err
