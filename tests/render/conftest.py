"""Fixtures: a scratch copy of the shipped repository inputs, and helpers to run the CLI."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.tools import REPO

INPUTS = ("jobs", "clusters", "trainops.yaml")


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    """A repo root holding copies of the shipped jobs, clusters and settings (no output yet)."""
    for name in INPUTS:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, tmp_path / name)
        else:
            shutil.copy(src, tmp_path / name)
    return tmp_path


def trainops(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the real CLI in a subprocess, as a user would."""
    return subprocess.run(
        [sys.executable, "-m", "trainops", "--root", str(root), *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )


def tree(root: Path) -> dict[str, bytes]:
    """Every file under root (relative path -> bytes)."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }
