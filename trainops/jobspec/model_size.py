"""A job's `model:` block: stated sizes, or sizes computed from a Hugging Face config.json.

The parameter count of a decoder-only transformer follows from its config: the Llama layout
(also Mistral's and Qwen2's) has an embedding, per layer the attention projections (query and
output of `heads x head_dim`, key and value of `kv_heads x head_dim`, with biases where the
config asks), the gated MLP's three matrices and two RMSNorms, a final norm and an output layer
unless tied to the embedding. tests/jobspec/test_model_size.py checks the counts against
transformers' own models (built on the meta device) and the largest layer against DeepSpeed's
`model_to_params`.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

from trainops.core.errors import InputError
from trainops.core.limits import inside, read_bounded
from trainops.jobspec import model
from trainops.jobspec.problems import Collector

SUFFIXES = {"K": 10**3, "M": 10**6, "B": 10**9, "T": 10**12}
COUNT = re.compile(r"^([0-9]+(?:\.[0-9]+)?)([KMBT])$")
# model_type values whose config.json lays the model out as Llama does.
LLAMA_LAYOUT = frozenset({"llama", "mistral", "qwen2"})
# Without a vocabulary to size the embedding: the largest module as a share of the parameters
# (a Llama's embedding is 2-4 % of it; its MLP matrices 1-2 %).
LARGEST_SHARE = 50


def count(value: int | str) -> int:
    """`13B` -> 13_000_000_000; an integer as it is (the schema allows nothing else)."""
    if isinstance(value, int):
        return value
    match = COUNT.match(value)
    assert match is not None  # the schema's pattern
    return round(float(match.group(1)) * SUFFIXES[match.group(2)])


def build(raw: dict[str, Any] | None) -> model.ModelSize | None:
    """The block as stated (a `config` is read by the loader, `resolve`)."""
    if raw is None:
        return None
    return model.ModelSize(
        parameters=count(raw["parameters"]) if "parameters" in raw else None,
        config=raw.get("config"),
        largest_layer=raw.get("largestLayerParameters"),
        hidden_size=raw.get("hiddenSize"),
        layers=raw.get("layers"),
        vocab_size=raw.get("vocabSize"),
        sequence_length=raw.get("sequenceLength"),
        micro_batch=raw.get("microBatch"),
        gradient_checkpointing=raw.get("gradientCheckpointing"),
    )


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


def _read(path: Path, display: str) -> dict[str, Any]:
    data = json.loads(read_bounded(path, display))
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    return data


def resolve(job: model.TrainingJob, root: Path, out: Collector) -> model.TrainingJob:
    """`job` with its `model.config` read into the sizes it does not state."""
    size = job.model
    if size is None or size.config is None:
        return job
    path = root / size.config
    where = ["model", "config"]
    if not inside(path, root) or not path.is_file():
        out.add(where, f"`{size.config}` is not a file in this repository (a path from its root)")
        return job
    try:
        config = _read(path, size.config)
        if config.get("model_type") not in LLAMA_LAYOUT:
            known = ", ".join(sorted(LLAMA_LAYOUT))
            raise ValueError(
                f"model_type {config.get('model_type')!r} is not one trainops can count"
                f" ({known}): state `model.parameters` (and hiddenSize, layers, vocabSize)"
            )
        sizes = llama_sizes(config)
    except InputError as err:
        out.add(where, err.problems[0].message)
        return job
    except (ValueError, KeyError, TypeError) as err:
        detail = f"missing `{err.args[0]}`" if isinstance(err, KeyError) else str(err)
        out.add(where, f"`{size.config}`: cannot size the model: {detail}")
        return job
    stated = {k: v for k, v in dataclasses.asdict(size).items() if v is not None}
    return dataclasses.replace(job, model=dataclasses.replace(size, **{**sizes, **stated}))
