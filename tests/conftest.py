"""Fixtures every test package shares."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.tools import INPUTS, REPO


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
