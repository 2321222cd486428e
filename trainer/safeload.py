"""Loading checkpoint files without running code planted on the checkpoint volume.

`torch.load(..., weights_only=False)` unpickles arbitrary objects, and unpickling can call any
function: a file planted in (or swapped into) a checkpoint folder on shared storage runs as the
trainer in every rank that resumes. Our own files are read with `weights_only=True`. DeepSpeed
0.19.8 hard-codes `weights_only=False` in its loaders (`runtime/checkpoint_engine/
torch_checkpoint_engine.py` `TorchCheckpointEngine.load`, `checkpoint/ds_to_universal.py`,
`checkpoint/universal_checkpoint.py`), all through the module attribute `torch.load`; while a
checkpoint is loaded, `weights_only_loads()` replaces that attribute with one that forces
`weights_only=True`, allow-listing the few non-tensor types DeepSpeed itself saves
(`DEEPSPEED_GLOBALS`, found by loading real ZeRO 0-3 checkpoints under the test suite).
Anything else in a pickle fails the load before it runs, with `UntrustedCheckpoint`.
"""

from __future__ import annotations

import contextlib
import importlib
import pickle
from collections.abc import Iterator
from typing import Any

import torch

from trainer.errors import ConfigError

# (module, attribute) of the classes DeepSpeed 0.19.8 pickles into its checkpoint files besides
# tensors and containers; imported lazily (DeepSpeed is optional for the DDP engine).
DEEPSPEED_GLOBALS = (
    ("deepspeed.runtime.zero.config", "ZeroStageEnum"),
    ("deepspeed.utils.tensor_fragment", "fragment_address"),
    ("deepspeed.runtime.fp16.loss_scaler", "LossScaler"),
    ("deepspeed.runtime.fp16.loss_scaler", "DynamicLossScaler"),
)


class UntrustedCheckpoint(ConfigError):
    """A checkpoint file holds an object a training checkpoint never does (exit code 2)."""


def deepspeed_globals() -> list[Any]:
    found = []
    for module, name in DEEPSPEED_GLOBALS:
        try:
            found.append(getattr(importlib.import_module(module), name))
        except (ImportError, AttributeError):
            continue  # another DeepSpeed version: its checkpoints then fail closed
    return found


@contextlib.contextmanager
def weights_only_loads(what: str) -> Iterator[None]:
    """Inside: every `torch.load` is a weights-only load; a refused pickle raises
    `UntrustedCheckpoint` naming `what` (the checkpoint folder)."""
    real = torch.load

    def load(*args: Any, **kwargs: Any) -> Any:
        kwargs["weights_only"] = True
        return real(*args, **kwargs)

    torch.load = load  # type: ignore[assignment]
    try:
        with torch.serialization.safe_globals(deepspeed_globals()):
            yield
    except pickle.UnpicklingError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
        raise UntrustedCheckpoint(
            f"{what}: refusing to resume: a checkpoint file holds something other than tensors "
            f"and DeepSpeed's own state, and loading it would run code ({first[:300]}). "
            "Inspect the folder; delete it or point --checkpoint-dir elsewhere"
        ) from exc
    finally:
        torch.load = real
