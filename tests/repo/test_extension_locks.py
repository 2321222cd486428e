"""The suite's start clears only stale DeepSpeed/torch build locks (tests/conftest.py): a lock
that a running compile holds open stays, or the compile of another session in the same checkout
fails at its release (torch/utils/file_baton.py `FileBaton.release` removes its lock file)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import clear_stale_locks

# What torch's FileBaton does while an extension compiles: create the lock exclusively and keep
# its descriptor open until the build ends.
HOLD = (
    "import os, sys, time; os.open(sys.argv[1], os.O_CREAT | os.O_EXCL);"
    " print(1, flush=True); time.sleep(60)"
)


def test_a_lock_held_by_a_running_compile_stays_and_a_stale_one_goes(tmp_path: Path) -> None:
    live = tmp_path / "cpu_adam" / "lock"
    stale = tmp_path / "shm_comm" / "lock"
    live.parent.mkdir()
    stale.parent.mkdir()
    stale.touch()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(live)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None
        holder.stdout.readline()  # the lock exists and is held
        clear_stale_locks(tmp_path)
        assert live.exists()
        assert not stale.exists()
    finally:
        holder.kill()
        holder.wait()
    clear_stale_locks(tmp_path)
    assert not live.exists()
