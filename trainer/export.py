"""Final model export: a Hugging Face model folder that `from_pretrained` loads as it is.

Checkpoints (`trainer.checkpoint`) hold engine state for resuming: under ZeRO-3 every rank's
slice of parameters and optimizer state, readable only by DeepSpeed at the same or a converted
world size. What inference and the next fine-tune need is the full model in transformers' format,
written once at the end of a finished run by rank 0 (`save_pretrained`: config.json and
safetensors weights).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from torch import nn

from trainer.config import ConfigError
from trainer.dist import DistEnv, barrier
from trainer.engine import Engine
from trainer.models.hf import CausalLM

PREFIX = "inner."  # the adapter's attribute in front of every transformers parameter name
TMP_SUFFIX = ".tmp-export"


def export_pretrained(env: DistEnv, engine: Engine, model: nn.Module, folder: str) -> Path:
    """Collective: gather the model and `save_pretrained` it into `folder` on rank 0.

    Written into a new `<folder>.tmp-export-*` directory and renamed, so a reader never sees
    half a model. The directory is made here (mkdtemp: a fresh name, created exclusively),
    never a path someone else may have planted: a `<folder>.tmp-export` symlink left on the
    shared volume was followed, and the model written wherever it pointed (issue 35.9).
    """
    if not isinstance(model, CausalLM):
        raise ConfigError("--export-dir exports Hugging Face models (--model hf-causal-lm)")
    state = engine.full_state_dict()  # every rank takes part in the gather
    target = Path(folder)
    if env.is_main:
        assert state is not None
        inner = {k.removeprefix(PREFIX): v for k, v in state.items() if k.startswith(PREFIX)}
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=target.name + TMP_SUFFIX + "-", dir=target.parent))
        mask = os.umask(0)
        os.umask(mask)
        tmp.chmod(0o777 & ~mask)  # mkdtemp's 0700 would hide the model from its readers
        model.inner.save_pretrained(str(tmp), state_dict=inner, safe_serialization=True)  # type: ignore[operator]
        if target.is_symlink() or target.is_file():
            target.unlink()  # a link is not ours to follow: replaced, its target untouched
        elif target.exists():
            shutil.rmtree(target)
        tmp.rename(target)
    barrier(env)
    return target
