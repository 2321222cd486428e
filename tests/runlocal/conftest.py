"""Fixtures for run-local: the real kustomize, and scratch repositories holding job variants."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.tools import REPO, require_tool
from trainops import build
from trainops.cli import main

Edit = Callable[[dict[str, Any]], None]


@pytest.fixture
def needs_kustomize() -> None:
    """run-local builds the overlay with the real kustomize (or `kubectl kustomize`)."""
    try:
        build.kustomize_command()
    except build.KustomizeError:
        require_tool("kustomize")


def variant_repo(root: Path, job: str, edit: Edit | None = None) -> Path:
    """A repository with the shipped clusters and one shipped job, edited, rendered for real."""
    shutil.copytree(REPO / "clusters", root / "clusters")
    (root / "jobs").mkdir()
    spec = yaml.safe_load((REPO / "jobs" / f"{job}.yaml").read_text())
    if edit is not None:
        edit(spec)
    (root / "jobs" / f"{job}.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    assert main(["--root", str(root), "render"]) == 0
    return root
