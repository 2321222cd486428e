"""Model registry: a name from the config -> an `nn.Module` returning logits."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from trainer.config import TrainConfig
from trainer.models.gpt import GPT, SHAPES
from trainer.models.resnet import ResNet


def build_model(
    cfg: TrainConfig,
    num_classes: int,
    dtype: torch.dtype | None = None,
    zero3_config: dict[str, Any] | None = None,
) -> nn.Module:
    """The model named by `cfg.model`, randomly initialised from `cfg.seed` (no downloads)."""
    if cfg.model in ("resnet18", "resnet50"):
        return ResNet(cfg.model, num_classes)
    if cfg.model in SHAPES:
        return GPT(cfg.model, cfg.vocab_size, cfg.seq_len)
    from trainer.models.hf import build_hf_causal_lm

    assert cfg.hf_model is not None  # validate() guarantees it
    return build_hf_causal_lm(cfg.hf_model, dtype, zero3_config, cfg.gradient_checkpointing)


__all__ = ["GPT", "ResNet", "build_model"]
