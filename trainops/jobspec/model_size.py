"""A job's `model:` block: stated sizes, or sizes computed from a Hugging Face config.json
in the repository (`trainops.facts.hf_config`)."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

from trainops.core.errors import InputError
from trainops.core.limits import inside, read_bounded
from trainops.facts.hf_config import LLAMA_LAYOUT, llama_sizes
from trainops.jobspec import model
from trainops.jobspec.problems import Collector

SUFFIXES = {"K": 10**3, "M": 10**6, "B": 10**9, "T": 10**12}
COUNT = re.compile(r"^([0-9]+(?:\.[0-9]+)?)([KMBT])$")
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
