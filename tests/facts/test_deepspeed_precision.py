"""Which precision a DeepSpeed config enables: trainops (`trainops.facts.deepspeed`, read by the
spec checks and the `deepspeed-precision-conflict` rule) and the trainer (`trainer.dsconfig`)
read it as DeepSpeed does, and DeepSpeed itself is the judge.

DeepSpeed 0.19.8 (the trainer image's pin, `DEEPSPEED_VERSION`),
`deepspeed/runtime/precision_config.py`: `get_bfloat16_config` takes the `bf16` section, and the
older `bfloat16` only when `bf16` is absent or null; `get_float16_config` takes `fp16`; both
build pydantic models through `DeepSpeedConfigModel.__init__` (`runtime/config_utils.py`),
which drops `"auto"` values first (the HF Trainer fills them in; DeepSpeed alone never does),
so `"enabled": "auto"` is the default, False. Before one reading, the three readers disagreed:
the trainer took `"auto"` for enabled and ignored `bfloat16`; the spec checks took any truthy
`enabled` in either bf16 section; the rule only a literal `true`.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.tools import require_module
from trainer.dsconfig import deepspeed_precision
from trainops.facts.deepspeed import DEEPSPEED_VERSION, enabled_precisions

CONFIGS: list[dict[str, Any]] = [
    {},
    {"bf16": {"enabled": True}},
    {"fp16": {"enabled": True}},
    {"bf16": {"enabled": "auto"}},
    {"fp16": {"enabled": "auto"}, "bf16": {"enabled": False}},
    {"bfloat16": {"enabled": True}},
    {"bf16": {"enabled": False}, "bfloat16": {"enabled": True}},
    {"bf16": None, "bfloat16": {"enabled": True}},
    {"bf16": {}, "bfloat16": {"enabled": True}},
    {"bf16": {"enabled": "true"}},
    {"bf16": {"enabled": "YES"}},
    {"fp16": {"enabled": 1}},
    {"fp16": {"enabled": 0}},
    {"fp16": {"enabled": "off"}},
]
IDS = [
    "empty",
    "bf16",
    "fp16",
    "bf16-auto",
    "fp16-auto",
    "bfloat16",
    "bf16-false-beats-bfloat16",
    "bf16-null-falls-back",
    "bf16-empty-beats-bfloat16",
    "string-true",
    "string-yes",
    "int-1",
    "int-0",
    "string-off",
]


def deepspeed_reads(config: dict[str, Any]) -> tuple[str, ...]:
    """What the installed DeepSpeed's own config classes enable."""
    precision = require_module("deepspeed.runtime.precision_config")
    bf16 = precision.get_bfloat16_config(config).enabled
    fp16 = precision.get_float16_config(config).enabled
    return tuple(name for name, on in (("bf16", bf16), ("fp16", fp16)) if on)


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_trainops_and_the_trainer_read_a_config_as_deepspeed_does(config: dict[str, Any]) -> None:
    deepspeed = require_module("deepspeed")
    assert deepspeed.__version__ == DEEPSPEED_VERSION
    expected = deepspeed_reads(config)
    assert enabled_precisions(config) == expected
    assert deepspeed_precision(config) == (expected[0] if expected else "fp32")


def test_auto_is_not_enabled_without_the_hf_trainer() -> None:
    """Stated without DeepSpeed installed: the trainer trained in bf16 autocast on a config
    DeepSpeed ran in fp32."""
    assert deepspeed_precision({"bf16": {"enabled": "auto"}}) == "fp32"
    assert enabled_precisions({"bf16": {"enabled": "auto"}}) == ()


def test_bf16_hides_the_older_bfloat16_section() -> None:
    config = {"bf16": {"enabled": False}, "bfloat16": {"enabled": True}}
    assert enabled_precisions(config) == ()
    assert deepspeed_precision({"bfloat16": {"enabled": True}}) == "bf16"
