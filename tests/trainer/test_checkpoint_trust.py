"""Issue 29.5: a checkpoint volume cannot make the trainer run code, or resume from elsewhere.

The slow test trains a DeepSpeed job to a checkpoint, then plays the attacker who can write to
the checkpoint volume: DeepSpeed 0.19.8 reads its files with `torch.load(...,
weights_only=False)` (`deepspeed/runtime/checkpoint_engine/torch_checkpoint_engine.py`), so a
pickle swapped in for the model states ran `exec` in the resuming rank before the fix.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch

from tests.tools import require_module
from tests.trainer.launch import TINY_GPT, events, run_torchrun
from trainer.checkpoint import META, CheckpointManager
from trainer.config import ConfigError
from trainer.dist import DistEnv
from trainer.safeload import UntrustedCheckpoint, weights_only_loads

REAL_LOAD = torch.load
SINGLE = DistEnv(0, 0, 1, 0, torch.device("cpu"), "gloo", distributed=False)


def complete(root: Path, name: str) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / META).write_text(json.dumps({"step": 1}))
    return folder


@pytest.mark.parametrize("pointer", ["../other-team/step-9", "step-9/../../x", "/etc", "step-"])
def test_latest_must_name_a_step_folder_of_this_directory(tmp_path: Path, pointer: str) -> None:
    """Before: `step-9/../../x` passed (`startswith("step-")`) and was resumed from."""
    root = tmp_path / "ckpt"
    complete(root, "step-1")
    complete(tmp_path / "other-team", "step-9")
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / META).write_text("{}")
    (root / "latest").write_text(pointer)
    with pytest.raises(ConfigError, match="not a step-N folder of"):
        CheckpointManager(root, 3, SINGLE).latest()


def test_symlinked_step_folders_are_not_checkpoints(tmp_path: Path) -> None:
    root = tmp_path / "ckpt"
    complete(root, "step-1")
    elsewhere = complete(tmp_path / "other-team", "step-9")
    os.symlink(elsewhere, root / "step-9")
    manager = CheckpointManager(root, 3, SINGLE)
    assert [p.name for p in manager.complete()] == ["step-1"]
    assert manager.latest() == root / "step-1"  # no pointer: the newest real folder
    (root / "latest").write_text("step-9")
    with pytest.raises(ConfigError, match="not a step-N folder of"):
        manager.latest()


class Planted:
    """Unpickling this runs `exec`: what an attacker writes into a checkpoint file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (exec, (f"open({str(self.marker)!r}, 'w').write('ran')",))


@pytest.mark.slow
def test_deepspeed_resume_refuses_a_planted_pickle(tmp_path: Path) -> None:
    require_module("deepspeed")
    ds = tmp_path / "ds.json"
    ds.write_text(
        json.dumps({"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 2}})
    )
    args = [a for a in TINY_GPT if a not in {"--batch-size", "8"}]
    args += ["--engine", "deepspeed", "--deepspeed-config", str(ds)]
    ckpt = tmp_path / "ckpt"
    first = run_torchrun([*args, "--steps", "2", "--checkpoint-dir", str(ckpt)], nproc=1)
    assert first.returncode == 0, (first.stdout + first.stderr)[-3000:]
    # the same files resume cleanly under weights-only loading (DeepSpeed's allow-listed types)
    again = run_torchrun([*args, "--steps", "3", "--checkpoint-dir", str(ckpt)], nproc=1)
    assert again.returncode == 0, (again.stdout + again.stderr)[-3000:]
    assert events(again.stdout, "resumed")[0]["step"] == 2

    marker = tmp_path / "marker"
    (states,) = (ckpt / "step-3" / "deepspeed").glob("mp_rank_*_model_states.pt")
    torch.save({"module": Planted(marker)}, states)
    result = run_torchrun([*args, "--steps", "4", "--checkpoint-dir", str(ckpt)], nproc=1)
    out = result.stdout + result.stderr
    assert result.returncode != 0
    assert not marker.exists(), "the planted pickle ran"
    assert "refusing to resume" in out and "step-3" in out, out[-3000:]
    assert not events(result.stdout, "step")  # nothing trained on a checkpoint we did not write


@pytest.mark.slow  # importing DeepSpeed takes seconds
def test_deepspeed_loader_runs_a_planted_pickle_unless_loads_are_weights_only(
    tmp_path: Path,
) -> None:
    """The consumer itself: DeepSpeed 0.19.8's `TorchCheckpointEngine.load`
    (`deepspeed/runtime/checkpoint_engine/torch_checkpoint_engine.py`, `weights_only=False`),
    what `engine.load_checkpoint` reads every file with. Bare, it runs the pickle (the hole);
    inside `weights_only_loads` it refuses it before anything runs."""
    require_module("deepspeed")
    engines = require_module("deepspeed.runtime.checkpoint_engine.torch_checkpoint_engine")
    planted = tmp_path / "mp_rank_00_model_states.pt"
    marker = tmp_path / "marker"
    torch.save({"module": Planted(marker)}, planted)
    with (
        pytest.raises(UntrustedCheckpoint, match="refusing to resume"),
        weights_only_loads(str(tmp_path)),
    ):
        engines.TorchCheckpointEngine().load(str(planted), map_location="cpu")
    assert not marker.exists()
    assert torch.load is REAL_LOAD  # restored after the block
    engines.TorchCheckpointEngine().load(str(planted), map_location="cpu")
    assert marker.read_text() == "ran"  # what resuming did before the fix
