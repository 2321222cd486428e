"""A decoder-only transformer's size from its Hugging Face `config.json`.

The Llama layout (also Mistral's and Qwen2's) has an embedding, per layer the attention
projections (query and output of `heads x head_dim`, key and value of `kv_heads x head_dim`,
with biases where the config asks), the gated MLP's three matrices and two RMSNorms, a final
norm and an output layer unless tied to the embedding. tests/jobspec/test_model_size.py checks
the counts against transformers' own models and the largest layer against DeepSpeed's
`model_to_params`.
"""

from __future__ import annotations

from typing import Any

# model_type values whose config.json lays the model out as Llama does.
LLAMA_LAYOUT = frozenset({"llama", "mistral", "qwen2"})


def llama_sizes(config: dict[str, Any]) -> dict[str, int]:
    """Parameters, largest module, width, depth and vocabulary of a Llama-layout config."""
    h = int(config["hidden_size"])
    layers = int(config["num_hidden_layers"])
    heads = int(config["num_attention_heads"])
    kv = int(config.get("num_key_value_heads") or heads)
    head_dim = int(config.get("head_dim") or h // heads)
    inter = int(config["intermediate_size"])
    vocab = int(config["vocab_size"])
    default_bias = config.get("model_type") == "qwen2"  # Qwen2's q/k/v carry biases
    bias = bool(config.get("attention_bias", default_bias))
    q, kv_width = heads * head_dim, kv * head_dim
    attention = h * q + 2 * h * kv_width + q * h
    if bias:
        attention += q + 2 * kv_width + (h if config.get("model_type") != "qwen2" else 0)
    mlp = 3 * h * inter + (2 * inter + h if config.get("mlp_bias") else 0)
    tied = bool(config.get("tie_word_embeddings", False))
    params = vocab * h * (1 if tied else 2) + layers * (attention + mlp + 2 * h) + h
    largest = max(vocab * h, h * inter + (inter if config.get("mlp_bias") else 0))
    return {"parameters": params, "largest_layer": largest, "hidden_size": h,
            "layers": layers, "vocab_size": vocab}  # fmt: skip
