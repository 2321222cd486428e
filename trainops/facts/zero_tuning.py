"""ZeRO settings sized to the model, and why each value was chosen.

DeepSpeed's defaults are sized for no model in particular: a 500M-element reduce bucket, a
50M-element ZeRO-3 prefetch bucket, parameters under 100k elements kept whole. The Hugging Face
integration replaces `"auto"` with values scaled to the model's width
(transformers/integrations/deepspeed.py, `HfTrainerDeepSpeedConfig.trainer_config_finalize`):

    reduce_bucket_size                   = hidden_size * hidden_size
    stage3_prefetch_bucket_size          = int(0.9 * hidden_size * hidden_size)
    stage3_param_persistence_threshold   = 10 * hidden_size

trainops writes those when the job states `model.hiddenSize` (or a config that has it), with
`overlap_comm: true` for ZeRO-3 (DeepSpeed 0.19.8 defaults it so for stage 3 only,
runtime/zero/config.py `overlap_comm_valid`; written out so the config says what runs). A key
the job's own `deepspeed.config` sets is left as the job wrote it. Every value written is
explained in the ConfigMap's `trainops.dev/deepspeed-tuning` annotation (`explain`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

ANNOTATION = "trainops.dev/deepspeed-tuning"
HF_SOURCE = "transformers' `auto` (integrations/deepspeed.py)"
# DeepSpeed 0.19.8's default (runtime/zero/config.py): the most parameters gathered at once.
MAX_LIVE_PARAMETERS = 1_000_000_000


@dataclass(frozen=True)
class Setting:
    key: str
    """Key under `zero_optimization`."""
    value: int | bool
    why: str


def settings(stage: int, hidden_size: int | None) -> list[Setting]:
    """The model-sized ZeRO settings for `stage`; none without a hidden size (DeepSpeed's
    defaults stand) or without ZeRO."""
    if not hidden_size or stage < 1:
        return []
    out: list[Setting] = []
    if stage == 3:
        out.append(
            Setting(
                "overlap_comm",
                True,
                "gathers and reduce-scatters overlap compute (DeepSpeed's ZeRO-3 default,"
                " written out)",
            )
        )
    h = hidden_size
    out.append(
        Setting(
            "reduce_bucket_size",
            h * h,
            f"hidden_size^2 = {h}^2, {HF_SOURCE}: one {h}x{h} weight's gradients per bucket",
        )
    )
    if stage == 3:
        out += [
            Setting(
                "stage3_prefetch_bucket_size",
                int(0.9 * h * h),
                f"0.9 x hidden_size^2 = 0.9 x {h}^2, {HF_SOURCE}: the next layer's weights"
                " gathered while this one computes",
            ),
            Setting(
                "stage3_param_persistence_threshold",
                10 * h,
                f"10 x hidden_size = 10 x {h}, {HF_SOURCE}: norms and biases stay whole"
                " instead of being gathered every pass",
            ),
            Setting(
                "stage3_max_live_parameters",
                MAX_LIVE_PARAMETERS,
                "DeepSpeed's default kept: at most 1e9 parameters (2 GB in 16-bit) gathered"
                " at once; lower it if the memory estimate is tight (docs/memory.md)",
            ),
        ]
    return out


def generated(stage: int, hidden_size: int | None) -> dict[str, Any]:
    """The settings as `zero_optimization` keys (the job's own config is merged over them)."""
    return {s.key: s.value for s in settings(stage, hidden_size)}


def explain(stage: int, hidden_size: int | None, user: Mapping[str, Any] | None) -> str:
    """One line per value trainops chose (keys the job's config sets are its own)."""
    own = (user or {}).get("zero_optimization") or {}
    lines = [
        f"zero_optimization.{s.key}={_json(s.value)}: {s.why}"
        for s in settings(stage, hidden_size)
        if s.key not in own
    ]
    return "\n".join(lines)


def _json(value: int | bool) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)
