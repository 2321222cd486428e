"""Derive `trainops/schemas/deepspeed.schema.json` from DeepSpeed's own config classes.

DeepSpeed takes 5 to 12 seconds to import (torch), too slow for every `trainops render`, so
the loader validates against this derived JSON Schema instead, and
`tests/facts/test_deepspeed_schema.py` regenerates it from the installed DeepSpeed and fails
when they differ (`TRAINOPS_UPDATE_GOLDEN=1` rewrites it).

- Top level: DeepSpeed's `DeepSpeedConfig` (deepspeed/runtime/config.py) is no pydantic model:
  it reads the keys it knows with `get`/`in`/`[]` and ignores every other key, so a misspelt
  `zero_optimisation` passes silently. The known keys are recorded by running
  `DeepSpeedConfig` itself on a dict that notes each key it reads, minus the keys it refuses
  as removed (`_REMOVED_TOP_LEVEL_CONFIG_KEYS`).
- `zero_optimization`, `bf16` (and its old name `bfloat16`), `fp16`: DeepSpeed's pydantic
  models (`DeepSpeedConfigModel`: `extra="forbid"`, `populate_by_name=True`, so a field is
  accepted by its name and by its alias), with their types, enums and bounds.
"""

from __future__ import annotations

import enum
import json
import pathlib
import types
import typing
from typing import Any

DEEPSPEED_VERSION = "0.19.8"


class _Keys:
    """`dict.keys()` stand-in that records `key in d.keys()`."""

    def __init__(self, data: dict[str, Any], seen: set[str]) -> None:
        self.data, self.seen = data, seen

    def __contains__(self, key: object) -> bool:
        self.seen.add(str(key))
        return key in self.data

    def __iter__(self) -> Any:
        return iter(list(self.data))


def _recording_dict(seen: set[str]) -> type[dict[str, Any]]:
    class Recording(dict[str, Any]):
        def get(self, key: Any, default: Any = None) -> Any:
            seen.add(str(key))
            return super().get(key, default)

        def __contains__(self, key: object) -> bool:
            seen.add(str(key))
            return super().__contains__(key)

        def __getitem__(self, key: str) -> Any:
            seen.add(key)
            return super().__getitem__(key)

        def keys(self) -> Any:
            return _Keys(dict(self), seen)

    return Recording


def top_level_keys() -> list[str]:
    """The top-level keys `DeepSpeedConfig` reads (what it does not read, it ignores)."""
    from deepspeed.runtime import config as ds_config  # noqa: PLC0415 (5+ s: only here)

    seen: set[str] = set()
    ds_config.DeepSpeedConfig(_recording_dict(seen)({"train_micro_batch_size_per_gpu": 1}))
    removed = set(ds_config._REMOVED_TOP_LEVEL_CONFIG_KEYS)
    # Read in DeepSpeedConfig.__init__ only once torch.distributed is initialised.
    return sorted((seen - removed) | {"sequence_parallel_size"})


def _bounds(field: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for meta in field.metadata:
        for attr, key in (
            ("gt", "exclusiveMinimum"),
            ("ge", "minimum"),
            ("lt", "exclusiveMaximum"),
            ("le", "maximum"),
        ):
            value = getattr(meta, attr, None)
            if value is not None:
                out[key] = value
    return out


def _type(annotation: Any) -> dict[str, Any]:
    import pydantic  # noqa: PLC0415 (with DeepSpeed only)

    origin = typing.get_origin(annotation)
    if origin in {typing.Union, types.UnionType}:
        return {"anyOf": [_type(a) for a in typing.get_args(annotation)]}
    if origin in {list, typing.List}:  # noqa: UP006 (DeepSpeed writes typing.List)
        (item,) = typing.get_args(annotation)
        return {"type": "array", "items": _type(item)}
    if annotation is type(None):
        return {"type": "null"}
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return {"enum": [m.value for m in annotation]}
    if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
        return model_schema(annotation)
    if annotation is bool:
        return {"type": "boolean"}
    if annotation is int:
        return {"type": "integer"}
    if annotation is float:
        return {"type": "number"}
    if annotation in {str, pathlib.Path}:
        return {"type": "string"}
    raise AssertionError(f"no JSON Schema type for {annotation!r}: extend deepspeed_schema_gen")


def model_schema(model: Any) -> dict[str, Any]:
    """A DeepSpeedConfigModel as a closed JSON Schema object, by field name and by alias."""
    properties: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        schema = {**_type(field.annotation), **_bounds(field)}
        extra = field.json_schema_extra or {}
        if isinstance(extra, dict) and extra.get("deprecated"):
            schema["deprecated"] = True
        for key in {name, field.alias or name}:
            properties[key] = schema
    return {
        "type": "object",
        "additionalProperties": False,
        "properties": dict(sorted(properties.items())),
    }


def schema() -> dict[str, Any]:
    from deepspeed.runtime.precision_config import (  # noqa: PLC0415
        DeepSpeedBF16Config,
        DeepSpeedFP16Config,
    )
    from deepspeed.runtime.zero.config import DeepSpeedZeroConfig  # noqa: PLC0415

    properties: dict[str, Any] = {key: {} for key in top_level_keys()}
    bf16 = model_schema(DeepSpeedBF16Config)
    properties.update(
        # Not the bare boolean DeepSpeed still reads with a deprecation warning (stage 0 or 1).
        zero_optimization=model_schema(DeepSpeedZeroConfig),
        bf16=bf16,
        bfloat16=bf16,
        fp16=model_schema(DeepSpeedFP16Config),
    )
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"DeepSpeed {DEEPSPEED_VERSION} config",
        "description": "Generated by tests/facts/deepspeed_schema_gen.py from DeepSpeed's own"
        " config classes; do not edit.",
        "type": "object",
        "additionalProperties": False,
        "properties": dict(sorted(properties.items())),
    }


def text() -> str:
    return json.dumps(schema(), indent=1, sort_keys=True) + "\n"
