"""Fixtures every test package shares."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.tools import REPO, copy_inputs

# Nothing a test starts outlives the suite: the session fails on a leaked process (issue 35.10).
pytest_plugins = ["tests.process_guard"]

# DeepSpeed compiles its CPU ops (CPU Adam for ZeRO-Offload, the shm communicator) on first use
# into TORCH_EXTENSIONS_DIR, guarded by a `lock` file that torch's FileBaton waits on for ever:
# a compile killed half-way (a timed-out test) leaves it behind, and every later DeepSpeed run on
# the machine hangs. The suite compiles into this checkout's own build folder instead, and clears
# locks left by an earlier session before any test (or xdist worker, which inherits the env)
# starts: only stale ones, which no process holds open (torch's FileBaton keeps the lock's file
# descriptor open while it compiles). Removing a live one made a second session started in the
# same checkout fail the first one's compile (FileNotFoundError at its release).
TORCH_EXTENSIONS = REPO / "build" / "torch_extensions"


def held_open(paths: set[Path]) -> set[Path]:
    """The files of `paths` that some process has open (Linux's /proc; elsewhere none)."""
    held = set()
    pids = [p for p in os.listdir("/proc") if p.isdigit()] if os.path.isdir("/proc") else []
    for pid in pids:
        try:  # the process may end while it is read: its folder vanishes (an INTERNALERROR)
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = Path(os.readlink(f"/proc/{pid}/fd/{fd}"))
            except OSError:  # the process or descriptor is gone, or not ours to read
                continue
            if target in paths:
                held.add(target)
    return held


def clear_stale_locks(directory: Path) -> None:
    locks = {lock.resolve() for lock in directory.glob("**/lock")}
    for lock in locks - held_open(locks):
        lock.unlink(missing_ok=True)


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):  # an xdist worker: the controller did it
        return
    os.environ["TORCH_EXTENSIONS_DIR"] = str(TORCH_EXTENSIONS)
    clear_stale_locks(TORCH_EXTENSIONS)


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    """A repo root holding copies of the shipped jobs, clusters and settings (no output yet)."""
    return copy_inputs(REPO, tmp_path)
