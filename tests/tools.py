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


def shared_required() -> bool:
    """Whether tests must find `../shared` (the seeds and upstream CRDs beside the checkout).

    It is there for this project's CI (`.ci/run`), so under CI=true a missing file fails the
    test. The GitHub-hosted workflow checks out the repository alone and says so with
    TRAINOPS_WITHOUT_SHARED=true: there those tests skip, naming what is missing.
    """
    return in_ci() and os.environ.get("TRAINOPS_WITHOUT_SHARED", "").lower() != "true"


def require_shared(path: Path) -> Path:
    """`path` under `../shared`; skip when absent, fail where `shared_required()`."""
    if not path.exists():
        if shared_required():
            pytest.fail(f"{path} is required under CI")
        pytest.skip(f"{path} is not present")
    return path


def require_upstream() -> Path:
    """`../shared/upstream` (upstream CRDs and example manifests)."""
    return require_shared(UPSTREAM)
