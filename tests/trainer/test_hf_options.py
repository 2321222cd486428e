"""Issue 24.2: `--gradient-checkpointing` on the Hugging Face path, and the flags' guards.

Gradient checkpointing is checked by what it does, on a tiny random Llama: each decoder layer's
forward runs again during backward (transformers' `GradientCheckpointingLayer` under
`torch.utils.checkpoint`), and the gradients are the same as without it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch

from tests.tools import require_module
from trainer.config import ConfigError, parse_args
from trainer.models import build_model

TINY = {
    "model_type": "llama", "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 2, "num_key_value_heads": 2, "vocab_size": 128,
    "max_position_embeddings": 64,
}  # fmt: skip


def layer_calls_and_grads(tmp_path: Path, *flags: str) -> tuple[int, dict[str, torch.Tensor]]:
    (tmp_path / "config.json").write_text(json.dumps(TINY))
    argv = ["--model", "hf-causal-lm", "--hf-model", str(tmp_path), "--data", "synthetic-tokens"]
    cfg = parse_args([*argv, *flags], env={})
    torch.manual_seed(0)
    net = build_model(cfg, 128)
    net.train()
    calls = []

    def count(*_: Any) -> None:
        calls.append(1)

    for layer in net.inner.model.layers:  # type: ignore[union-attr]
        layer.register_forward_pre_hook(count)
    idx = torch.randint(0, 128, (2, 8), generator=torch.Generator().manual_seed(1))
    net(idx).float().sum().backward()
    return len(calls), {n: p.grad.clone() for n, p in net.named_parameters() if p.grad is not None}


def test_gradient_checkpointing_recomputes_layers_with_the_same_gradients(tmp_path: Path) -> None:
    require_module("transformers")
    plain_calls, plain = layer_calls_and_grads(tmp_path)
    ckpt_calls, ckpt = layer_calls_and_grads(tmp_path, "--gradient-checkpointing")
    assert plain_calls == 2  # two layers, one forward each
    assert ckpt_calls == 4  # and once more each in backward
    assert plain.keys() == ckpt.keys() and plain
    for name in plain:
        torch.testing.assert_close(ckpt[name], plain[name], msg=name)


@pytest.mark.parametrize("flag", [["--gradient-checkpointing"], ["--export-dir", "/out"]])
def test_hf_only_flags_refused_for_other_models(flag: list[str]) -> None:
    with pytest.raises(ConfigError, match="only used with `--model hf-causal-lm`"):
        parse_args(["--model", "gpt-tiny", "--data", "synthetic-tokens", *flag], env={})
