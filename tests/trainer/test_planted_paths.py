"""Issue 35.9: what someone with write access to the shared volume plants beside the trainer's
files is not followed. A symlinked `latest` pointer leaked the first 80 characters of its
target into the log; a planted `<export-dir>.tmp-export` symlink was followed during export
(the model written wherever it pointed, and the export left as a link to it)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from tests import processes
from tests.tools import REPO, require_module
from tests.trainer.launch import env, one
from tests.trainer.test_llm_job import TINY_LLAMA, VOCAB
from trainer.checkpoint import META, CheckpointManager
from trainer.config import ConfigError
from trainer.dist import DistEnv

SINGLE = DistEnv(0, 0, 1, 0, torch.device("cpu"), "gloo", distributed=False)
SECRET = "TOPSECRET-another-teams-file-contents"


def test_a_symlinked_latest_is_refused_without_reading_its_target(tmp_path: Path) -> None:
    root = tmp_path / "ckpt"
    (root / "step-1").mkdir(parents=True)
    (root / "step-1" / META).write_text(json.dumps({"step": 1}))
    target = tmp_path / "secret"
    target.write_text(f"{SECRET}\n")
    os.symlink(target, root / "latest")
    with pytest.raises(ConfigError, match="not a regular file") as err:
        CheckpointManager(root, 3, SINGLE).latest()
    assert "TOPSECRET" not in str(err.value)


@pytest.mark.slow
def test_a_planted_tmp_export_link_is_not_followed(tmp_path: Path) -> None:
    """A single-process run of a tiny Llama exporting its model (`--export-dir`)."""
    require_module("transformers")
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text(json.dumps(TINY_LLAMA))
    (tmp_path / "train").mkdir()
    tokens = np.random.default_rng(0).integers(0, VOCAB, size=32 * 64, dtype="uint16")
    tokens.tofile(tmp_path / "train" / "train.bin")
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "theirs.txt").write_text("keep")
    export = tmp_path / "export"
    os.symlink(victim, tmp_path / "export.tmp-export")
    argv = [sys.executable, "-m", "trainer", "--model=hf-causal-lm",
            f"--hf-model={tmp_path / 'model'}", "--data=tokens",
            f"--data-path={tmp_path / 'train'}", "--token-dtype=uint16", "--seq-len=32",
            "--batch-size=2", "--steps=1", "--num-workers=0", f"--export-dir={export}"]  # fmt: skip
    result = processes.run(argv, timeout=300, cwd=REPO, env=env(), text=True)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    assert one(result.stdout, "exported")["path"] == str(export)
    assert sorted(p.name for p in victim.iterdir()) == ["theirs.txt"]
    assert export.is_dir() and not export.is_symlink()
    assert (export / "config.json").is_file() and (export / "model.safetensors").is_file()
