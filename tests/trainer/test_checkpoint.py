"""Checkpoint manager: atomic folders, `latest` pointer, keep-last-N, kill -9 mid-save."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from tests.processes import started
from tests.tools import REPO
from trainer.checkpoint import CheckpointManager
from trainer.dist import DistEnv

SINGLE = DistEnv(0, 0, 1, 0, torch.device("cpu"), "gloo", distributed=False)


def write_value(value: int):  # type: ignore[no-untyped-def]
    def write(folder: Path) -> None:
        torch.save({"value": value}, folder / "state.pt")

    return write


def test_save_rotates_and_latest_names_the_newest(tmp_path: Path) -> None:
    mgr = CheckpointManager(tmp_path, keep=2, env=SINGLE)
    assert mgr.latest() is None
    for step in (10, 20, 30):
        mgr.save(step, write_value(step), {"step": step})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest", "step-20", "step-30"]
    latest = mgr.latest()
    assert latest is not None and latest.name == "step-30"
    assert CheckpointManager.read_meta(latest) == {"step": 30}
    # saving a step that is already complete changes nothing
    mgr.save(30, write_value(999), {"step": 30})
    assert torch.load(latest / "state.pt")["value"] == 30


def test_incomplete_folders_are_never_chosen(tmp_path: Path) -> None:
    mgr = CheckpointManager(tmp_path, keep=3, env=SINGLE)
    mgr.save(10, write_value(10), {"step": 10})
    (tmp_path / ".tmp-step-20").mkdir()
    (tmp_path / "step-30").mkdir()  # no meta.json: not complete
    assert mgr.latest() == tmp_path / "step-10"
    (tmp_path / "latest").unlink()  # pointer lost: newest complete folder
    assert mgr.latest() == tmp_path / "step-10"
    (tmp_path / "step-30" / "state.pt").write_bytes(b"half")
    mgr.save(30, write_value(30), {"step": 30})  # the incomplete folder makes room
    assert mgr.latest() == tmp_path / "step-30"
    assert torch.load(tmp_path / "step-30" / "state.pt")["value"] == 30
    mgr.save(40, write_value(40), {"step": 40})
    assert not (tmp_path / ".tmp-step-20").exists()  # stale temporaries are cleaned


def test_resume_point_removes_complete_folders_newer_than_latest(tmp_path: Path) -> None:
    mgr = CheckpointManager(tmp_path, keep=3, env=SINGLE)
    assert mgr.resume_point() is None
    for step in (10, 20, 30):
        mgr.save(step, write_value(step), {"step": step})
    # A crash after step-30 was renamed into place but before `latest` named it.
    (tmp_path / "latest").write_text("step-20")
    point = mgr.resume_point()
    assert point == (tmp_path / "step-20", {"step": 20})
    assert [p.name for p in mgr.complete()] == ["step-10", "step-20"]
    # The resumed run reaches step 30 again: its save is a real one, not the stale folder.
    mgr.save(30, write_value(300), {"step": 30})
    assert torch.load(tmp_path / "step-30" / "state.pt")["value"] == 300
    assert (tmp_path / "latest").read_text() == "step-30"
    mgr.save(40, write_value(400), {"step": 40})
    assert [p.name for p in mgr.complete()] == ["step-20", "step-30", "step-40"]


SAVER = """
import sys, time, torch
from pathlib import Path
from trainer.checkpoint import CheckpointManager
from trainer.dist import DistEnv
env = DistEnv(0, 0, 1, 0, torch.device("cpu"), "gloo", distributed=False)
mgr = CheckpointManager(sys.argv[1], keep=3, env=env)
def write(folder):
    torch.save({"value": 2}, folder / "state.pt")
    (folder / "half-written").write_bytes(b"x" * 1024)
    print("writing", flush=True)
    time.sleep(60)
mgr.save(2, write, {"step": 2})
"""


def test_kill_9_during_save_leaves_previous_checkpoint_loadable(tmp_path: Path) -> None:
    mgr = CheckpointManager(tmp_path, keep=3, env=SINGLE)
    mgr.save(1, write_value(1), {"step": 1})
    with started(
        [sys.executable, "-c", SAVER, str(tmp_path)], cwd=REPO,
        stdout=subprocess.PIPE, text=True,
    ) as proc:  # fmt: skip
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "writing"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    assert (tmp_path / ".tmp-step-2" / "half-written").exists()  # killed mid-save
    latest = mgr.latest()
    assert latest is not None and latest.name == "step-1"
    assert torch.load(latest / "state.pt")["value"] == 1
    assert json.loads((latest / "meta.json").read_text()) == {"step": 1}
    # the next save succeeds over the debris
    mgr.save(2, write_value(2), {"step": 2})
    assert mgr.latest() == tmp_path / "step-2"
    assert not (tmp_path / ".tmp-step-2").exists()


@pytest.mark.parametrize("keep", [1, 2])
def test_keep_last_n(tmp_path: Path, keep: int) -> None:
    mgr = CheckpointManager(tmp_path, keep=keep, env=SINGLE)
    for step in range(1, 5):
        mgr.save(step, write_value(step), {"step": step})
        time.sleep(0)
    assert [p.name for p in mgr.complete()] == [f"step-{s}" for s in range(5 - keep, 5)]
