"""A model's size from its Hugging Face config.json (trainops/jobspec/model_size.py), judged by
transformers' own models (small ones, built for real) and the largest
layer by DeepSpeed's `model_to_params` (runtime/zero/stage3.py), the count its ZeRO-3
estimator takes."""

from __future__ import annotations

import os
from typing import Any

import pytest

from tests.tools import require_module
from trainops.facts.hf_config import llama_sizes
from trainops.jobspec.model_size import count

BASE = {"hidden_size": 64, "intermediate_size": 176, "num_hidden_layers": 3,
        "num_attention_heads": 8, "vocab_size": 1000}  # fmt: skip
CONFIGS: list[dict[str, Any]] = [
    {"model_type": "llama", **BASE},
    {"model_type": "llama", **BASE, "num_key_value_heads": 2, "tie_word_embeddings": True},
    {"model_type": "llama", **BASE, "attention_bias": True, "mlp_bias": True, "head_dim": 16},
    {"model_type": "mistral", **BASE, "num_key_value_heads": 4},
    {"model_type": "qwen2", **BASE, "num_key_value_heads": 2, "tie_word_embeddings": False},
    {"model_type": "llama", **BASE, "vocab_size": 10, "intermediate_size": 2048},
]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c["model_type"])
def test_counts_match_transformers_and_deepspeed(config: dict[str, Any]) -> None:
    torch = require_module("torch")
    transformers = require_module("transformers")
    os.environ.setdefault("DS_ACCELERATOR", "cpu")
    model_to_params = require_module("deepspeed.runtime.zero.stage3").model_to_params

    hf_config = transformers.AutoConfig.for_model(**config)
    torch.manual_seed(0)  # small enough to build for real: DeepSpeed dedupes by data_ptr
    model = transformers.AutoModelForCausalLM.from_config(hf_config)
    total, largest = model_to_params(model)  # shared (tied) weights counted once
    sizes = llama_sizes(config)
    assert sizes["parameters"] == total
    assert sizes["largest_layer"] == largest
    assert (sizes["hidden_size"], sizes["layers"], sizes["vocab_size"]) == (
        config["hidden_size"], config["num_hidden_layers"], config["vocab_size"],
    )  # fmt: skip


def test_llama_2_13b() -> None:
    config = {"model_type": "llama", "hidden_size": 5120, "intermediate_size": 13824,
              "num_hidden_layers": 40, "num_attention_heads": 40, "vocab_size": 32000}  # fmt: skip
    assert llama_sizes(config)["parameters"] == 13_015_864_320  # its model card's 13.0B


def test_counts_with_suffixes() -> None:
    assert count("13B") == 13_000_000_000
    assert count("0.35B") == count("350M") == 350_000_000
    assert count(1234) == 1234
