"""Optional Hugging Face causal LM (the LLM fine-tune path), built from a local directory.

Weights are loaded when the directory has them, else the model is randomly initialised from
`config.json` (no downloads). Under DeepSpeed ZeRO-3 the caller activates `HfDeepSpeedConfig`
first so that `from_pretrained` partitions parameters while loading (a 13B model does not fit in
host memory once per rank).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn

from trainer.config import ConfigError

WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)


class CausalLM(nn.Module):
    """Adapter: token ids -> logits tensor, like the built-in GPT."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        logits: torch.Tensor = self.inner(input_ids=idx).logits
        return logits


def build_hf_causal_lm(
    path: str,
    dtype: torch.dtype | None = None,
    zero3_config: dict[str, Any] | None = None,
    gradient_checkpointing: bool = False,
) -> CausalLM:
    """Load (weights present) or randomly initialise (config only) a causal LM from `path`.

    With a ZeRO-3 DeepSpeed config, `HfDeepSpeedConfig` is alive while the model is built, so
    transformers creates it under `deepspeed.zero.Init` (parameters partitioned as they load).
    `gradient_checkpointing` recomputes each decoder layer's activations in backward (seed 001's
    memory advice): transformers' own switch, non-reentrant checkpointing (the variant that
    works with frozen inputs and ZeRO-3's parameter hooks), and no KV cache (it is useless in
    training and transformers turns it off with a warning otherwise).
    """
    try:
        import transformers
    except ImportError as exc:
        raise ConfigError(
            "--model hf-causal-lm needs the `transformers` package in the image"
        ) from exc
    keep_alive = None
    if zero3_config is not None:
        from transformers.integrations import HfDeepSpeedConfig

        keep_alive = HfDeepSpeedConfig(zero3_config)  # weak global reference: hold it here
    root = Path(path)
    if not (root / "config.json").is_file():
        raise ConfigError(f"--hf-model {path}: no config.json there (a local model dir)")
    if any((root / name).is_file() for name in WEIGHT_FILES):
        model = transformers.AutoModelForCausalLM.from_pretrained(str(root), torch_dtype=dtype)
    else:
        config = transformers.AutoConfig.from_pretrained(str(root))
        model = transformers.AutoModelForCausalLM.from_config(config, torch_dtype=dtype)
    del keep_alive
    if gradient_checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.config.use_cache = False
    return CausalLM(model)
