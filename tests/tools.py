"""Helpers for tests that drive real tools."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
UPSTREAM = REPO.parent / "shared" / "upstream"
SEEDS = REPO.parent / "shared" / "seeds"


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def find_tool(name: str) -> str | None:
    """`name` from this interpreter's bin directory (the venv's console scripts), else PATH."""
    beside = Path(sys.executable).parent / name
    if beside.is_file():
        return str(beside)
    return shutil.which(name)


def require_tool(name: str) -> str:
    """Path of `name`; skip the test when it is missing, but fail under CI=true."""
    path = find_tool(name)
    if path is None:
        if in_ci():
            pytest.fail(f"`{name}` is required under CI but is not on PATH")
        pytest.skip(f"`{name}` is not on PATH")
    return path


def require_upstream() -> Path:
    """`../shared/upstream`; skip when absent, fail under CI=true."""
    if not UPSTREAM.is_dir():
        if in_ci():
            pytest.fail(f"{UPSTREAM} is required under CI")
        pytest.skip(f"{UPSTREAM} is not present")
    return UPSTREAM
