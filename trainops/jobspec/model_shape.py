"""A job's `model:` block as a typed object (re-exported by `trainops.jobspec.model`); built
and read from its config.json by `trainops.jobspec.model_size`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelSize:
    """What the job trains (`model:`), as stated or read from its Hugging Face config: the
    memory estimate's and DeepSpeed's sizes (docs/memory.md)."""

    parameters: int | None
    """Total parameters; None only while `config` is still to be read (the loader reads it)."""
    config: str | None = None
    """A Hugging Face `config.json` in the repository, path from its root."""
    largest_layer: int | None = None
    """Parameters of the largest single module (ZeRO-3 gathers one at a time)."""
    hidden_size: int | None = None
    """Model width: activations, and DeepSpeed's bucket sizes."""
    layers: int | None = None
    """Transformer layers."""
    vocab_size: int | None = None
    """Vocabulary: the output layer's logits."""
    sequence_length: int | None = None
    """Tokens per sample (None: the trainer's `--seq-len`, if it runs ours)."""
    micro_batch: int | None = None
    """Samples per GPU per pass (None: DeepSpeed's micro batch, or the trainer's flag)."""
    gradient_checkpointing: bool | None = None
    """None: the trainer's `--gradient-checkpointing`."""
