"""Fixtures every test package shares."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.tools import REPO, copy_inputs

# DeepSpeed compiles its CPU ops (CPU Adam for ZeRO-Offload, the shm communicator) on first use
# into TORCH_EXTENSIONS_DIR, guarded by a `lock` file that torch's FileBaton waits on for ever:
# a compile killed half-way (a timed-out test) leaves it behind, and every later DeepSpeed run on
# the machine hangs. The suite compiles into this checkout's own build folder instead, and clears
# locks left by an earlier session before any test (or xdist worker, which inherits the env)
# starts.
TORCH_EXTENSIONS = REPO / "build" / "torch_extensions"


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):  # an xdist worker: the controller did it
        return
    os.environ["TORCH_EXTENSIONS_DIR"] = str(TORCH_EXTENSIONS)
    for lock in TORCH_EXTENSIONS.glob("**/lock"):
        lock.unlink()


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    """A repo root holding copies of the shipped jobs, clusters and settings (no output yet)."""
    return copy_inputs(REPO, tmp_path)
