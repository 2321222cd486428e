"""Fixtures every test package shares."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tools import REPO, copy_inputs


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    """A repo root holding copies of the shipped jobs, clusters and settings (no output yet)."""
    return copy_inputs(REPO, tmp_path)
