"""The DeepSpeed JSON config: reading it, and taking batch, precision and clipping from it.

Separate from `trainer.config` (flags and YAML) because the DeepSpeed config is a second source
of truth with its own rules; `trainer.engine` reads it again to build the engine.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainer.errors import ConfigError

if TYPE_CHECKING:
    from trainer.config import TrainConfig


def load_deepspeed_config(path: str) -> dict[str, Any]:
    """Read the DeepSpeed JSON config (the renderer mounts it from a ConfigMap)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read DeepSpeed config ({exc.strerror})") from exc
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}:{exc.lineno}: invalid JSON: {exc.msg}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: DeepSpeed config must be a JSON object")
    return data


# Strings pydantic's lax mode reads as True (DeepSpeed's config models are pydantic models).
_TRUE = frozenset({"1", "on", "t", "true", "y", "yes"})


def _enabled(section: Any) -> bool:
    """`enabled` as DeepSpeed 0.19.8 reads it: `"auto"` is dropped before validation
    (deepspeed/runtime/config_utils.py DeepSpeedConfigModel.__init__), leaving the default
    False; otherwise pydantic's lax bool."""
    value = section.get("enabled", False) if isinstance(section, Mapping) else False
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value == 1
    return isinstance(value, str) and value.lower() in _TRUE


def deepspeed_precision(ds: Mapping[str, Any]) -> str:
    """The precision DeepSpeed trains in with this config (deepspeed/runtime/precision_config.py
    at 0.19.8): the `bf16` section, or the older `bfloat16` when `bf16` is absent; then `fp16`;
    else fp32. `"auto"` is not enabled (DeepSpeed drops it; only the HF Trainer fills it in).
    trainops reads configs the same way (`trainops/facts/deepspeed.py`, which this image does
    not ship); tests/facts/test_deepspeed_precision.py holds both to DeepSpeed's classes."""
    bf16 = ds.get("bf16")
    if bf16 is None:
        bf16 = ds.get("bfloat16")
    for name, section in (("bf16", bf16), ("fp16", ds.get("fp16"))):
        if _enabled(section):
            return name
    return "fp32"


def apply_deepspeed_config(cfg: TrainConfig, ds: Mapping[str, Any]) -> None:
    """Take micro batch, accumulation, precision and clipping from the DeepSpeed config.

    The DeepSpeed config is the source of truth; a flag that says otherwise is an error
    rather than a silent override. `train_batch_size` should be absent so DeepSpeed derives
    it from the world size (elastic restarts at another size stay valid).
    """
    src = cfg.deepspeed_config or "DeepSpeed config"
    micro = ds.get("train_micro_batch_size_per_gpu")
    if not isinstance(micro, int) or micro < 1:
        raise ConfigError(f"{src}: `train_micro_batch_size_per_gpu` must be an integer >= 1")
    accum = ds.get("gradient_accumulation_steps", 1)
    if not isinstance(accum, int) or accum < 1:
        raise ConfigError(f"{src}: `gradient_accumulation_steps` must be an integer >= 1")
    precision = deepspeed_precision(ds)
    checks = (
        ("batch_size", micro, "train_micro_batch_size_per_gpu"),
        ("grad_accum", accum, "gradient_accumulation_steps"),
        ("precision", precision, "bf16/fp16 sections"),
    )
    for name, ds_value, ds_key in checks:
        if name in cfg.explicit and getattr(cfg, name) != ds_value:
            flag = "--" + name.replace("_", "-")
            raise ConfigError(
                f"{flag} {getattr(cfg, name)} contradicts {src} ({ds_key} gives {ds_value}); "
                f"the DeepSpeed config is the source of truth: drop {flag} or change the config"
            )
    clip = ds.get("gradient_clipping")
    if "grad_clip" in cfg.explicit and clip not in (None, 0, 0.0) and clip != cfg.grad_clip:
        raise ConfigError(
            f"--grad-clip {cfg.grad_clip} contradicts {src} (gradient_clipping {clip})"
        )
    cfg.batch_size = micro
    cfg.grad_accum = accum
    cfg.precision = precision
    if clip not in (None, 0, 0.0) and isinstance(clip, int | float):
        cfg.grad_clip = float(clip)
