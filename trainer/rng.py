"""Random-number state of a rank: seeding, and saving/restoring it with a checkpoint.

Saved as tensors, ints, floats and tuples only, so resuming loads it with `weights_only=True`.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import torch

from trainer.dist import DistEnv


def rng_state(env: DistEnv) -> dict[str, Any]:
    """Tensors, ints and tuples only, so resuming loads it with `weights_only=True` (a
    pickle from a shared volume must not be able to run code in every rank)."""
    numpy_state: Any = np.random.get_state()
    kind, keys, pos, has_gauss, gauss = numpy_state
    state: dict[str, Any] = {
        "torch": torch.get_rng_state(),
        "python": random.getstate(),
        "numpy": (
            str(kind),
            torch.from_numpy(keys.astype(np.int64)),
            int(pos),
            int(has_gauss),
            float(gauss),
        ),
    }
    if env.device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(env.device)
    return state


def set_rng_state(env: DistEnv, state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    random.setstate(state["python"])
    kind, keys, pos, has_gauss, gauss = state["numpy"]
    np.random.set_state((kind, keys.numpy().astype(np.uint32), pos, has_gauss, gauss))
    if "cuda" in state and env.device.type == "cuda":
        torch.cuda.set_rng_state(state["cuda"], env.device)


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
