"""ZeRO settings sized to the model (trainops/facts/zero_tuning.py): the values transformers'
DeepSpeed integration fills in for `"auto"` (transformers/integrations/deepspeed.py,
`HfTrainerDeepSpeedConfig.trainer_config_finalize`), run here as the judge; and what the
rendered config and its ConfigMap's annotation say."""

from __future__ import annotations

import json
import os
import types

import pytest

from tests.tools import require_module
from trainops.facts import deepspeed as ds_facts
from trainops.facts import zero_tuning

HIDDEN_KEYS = (
    "reduce_bucket_size",
    "stage3_prefetch_bucket_size",
    "stage3_param_persistence_threshold",
)


@pytest.mark.parametrize("hidden", [768, 2048, 5120, 8192])
def test_hidden_sized_values_are_transformers_auto(hidden: int) -> None:
    os.environ.setdefault("DS_ACCELERATOR", "cpu")
    integration = require_module("transformers.integrations.deepspeed")
    config = {"zero_optimization": {"stage": 3, **dict.fromkeys(HIDDEN_KEYS, "auto")},
              "train_micro_batch_size_per_gpu": 1}  # fmt: skip
    hf = integration.HfTrainerDeepSpeedConfig(config)
    model = types.SimpleNamespace(config=types.SimpleNamespace(hidden_size=hidden))
    args = types.SimpleNamespace(get_warmup_steps=lambda steps: 0)
    hf.trainer_config_finalize(args, model, 100)
    ours = zero_tuning.generated(3, hidden)
    for key in HIDDEN_KEYS:
        assert ours[key] == hf.config["zero_optimization"][key], key
    assert ours["overlap_comm"] is True


def test_stages_and_missing_width() -> None:
    assert zero_tuning.generated(3, None) == {}  # DeepSpeed's defaults stand
    assert zero_tuning.generated(0, 4096) == {}
    assert zero_tuning.generated(2, 4096) == {"reduce_bucket_size": 4096 * 4096}
    assert set(zero_tuning.generated(1, 4096)) == {"reduce_bucket_size"}


def test_the_job_config_wins_and_the_note_explains_only_our_values() -> None:
    user = {"zero_optimization": {"reduce_bucket_size": 5e8}}
    config = ds_facts.build_config(3, "bf16", 2, 8, user, tuned=zero_tuning.generated(3, 5120))
    zero = config["zero_optimization"]
    assert zero["reduce_bucket_size"] == 5e8 and zero["stage3_prefetch_bucket_size"] == 23592960
    note = zero_tuning.explain(3, 5120, user)
    lines = note.splitlines()
    assert [line.split("=")[0] for line in lines] == [
        "zero_optimization.overlap_comm",
        "zero_optimization.stage3_prefetch_bucket_size",
        "zero_optimization.stage3_param_persistence_threshold",
        "zero_optimization.stage3_max_live_parameters",
    ]
    assert lines[0].startswith("zero_optimization.overlap_comm=true: ")
    assert "0.9 x hidden_size^2 = 0.9 x 5120^2" in lines[1]
    json.dumps(config)  # JSON-clean: DeepSpeed reads it from the ConfigMap
