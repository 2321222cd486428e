"""DeepSpeed config: generated from the job spec, and batch sizes that hold at every world size.

DeepSpeed asserts at start-up that
    train_batch_size == train_micro_batch_size_per_gpu * gradient_accumulation_steps * dp_world
and derives whichever of the three is missing (deepspeed/runtime/config.py,
`_set_batch_related_parameters`). An elastic job restarts at another world size,
so a config pinning all three breaks the first restart. We therefore never write
train_batch_size ourselves: micro batch and accumulation are fixed, the global
batch follows the world size. A user-supplied config is checked at every world
size the job can run at.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

# The DeepSpeed release whose config classes `trainops/schemas/deepspeed.schema.json` is
# derived from (tests/facts/deepspeed_schema_gen.py), and what the trainer image installs.
DEEPSPEED_VERSION = "0.19.8"
CONFIG_SCHEMA = "deepspeed.schema.json"

TRAIN_BATCH = "train_batch_size"
MICRO_BATCH = "train_micro_batch_size_per_gpu"
GRAD_ACCUM = "gradient_accumulation_steps"
BATCH_KEYS = (TRAIN_BATCH, MICRO_BATCH, GRAD_ACCUM)

CONFIG_DIR = "/etc/deepspeed"
CONFIG_FILE = "ds_config.json"
CONFIG_PATH = f"{CONFIG_DIR}/{CONFIG_FILE}"

# Gradient clipping at 1.0 is DeepSpeed's and HF Trainer's usual default for LLM fine-tuning.
DEFAULT_GRADIENT_CLIPPING = 1.0


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`over` over `base`: a new mapping sharing `base`'s untouched values (the caller's
    `base` is its own, built per call) and holding copies of `over`'s (the user's config,
    which the job keeps)."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def build_config(
    zero_stage: int,
    precision: str,
    micro_batch_per_gpu: int | None,
    gradient_accumulation: int | None,
    user: dict[str, Any] | None,
    *,
    tuned: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The config the job runs with: generated settings (with `tuned` ZeRO settings sized to
    the model, `trainops.facts.zero_tuning`), then the user's config over them, then the job's
    own micro batch and accumulation over both."""
    generated: dict[str, Any] = {
        "zero_optimization": {"stage": zero_stage, **(tuned or {})},
        "bf16": {"enabled": precision == "bf16"},
        "fp16": {"enabled": precision == "fp16"},
        "gradient_clipping": DEFAULT_GRADIENT_CLIPPING,
        "steps_per_print": 100,
        "wall_clock_breakdown": False,
    }
    user = user or {}
    if not any(key in user for key in BATCH_KEYS):
        generated[MICRO_BATCH] = micro_batch_per_gpu or 1
        generated[GRAD_ACCUM] = gradient_accumulation or 1
    merged = _deep_merge(generated, user)
    if micro_batch_per_gpu is not None:
        merged[MICRO_BATCH] = micro_batch_per_gpu
    if gradient_accumulation is not None:
        merged[GRAD_ACCUM] = gradient_accumulation
    return merged


# Kubernetes' documented scalability limit: no more than 150,000 pods in one cluster
# (https://kubernetes.io/docs/setup/best-practices/cluster-large/). The job spec schema caps
# `replicas` and `elastic.maxReplicas` at it (tests/jobspec/test_bounds.py checks they agree).
MAX_CLUSTER_PODS = 150_000


def world_sizes(procs_per_pod: int, pods: int, elastic: tuple[int, int] | None) -> range:
    """Every data-parallel world size a job can run at: pods x processes per pod, at every
    pod count of an elastic range (torchrun restarts the group at any size inside it).

    A `range`, computed not enumerated: `maxReplicas: 2147483647` made a list of two billion
    sizes (16-19 GB before the OOM killer, issue 29.7). An elastic range is cut at
    `MAX_CLUSTER_PODS`: no cluster runs more pods, so no larger world size ever forms."""
    if elastic is not None and procs_per_pod > 0:
        low, high = elastic[0], min(elastic[1], MAX_CLUSTER_PODS)
        return range(low * procs_per_pod, (high + 1) * procs_per_pod, procs_per_pod)
    size = pods * procs_per_pod if elastic is None else 0
    return range(size, size + 1)


def config_json(config: dict[str, Any]) -> str:
    """Compact, sorted JSON: the same bytes every time."""
    return json.dumps(config, sort_keys=True, separators=(",", ":"))


# The HF Trainer fills `"auto"` values from its own arguments before DeepSpeed reads them.
AUTO = "auto"

# Strings pydantic's lax mode reads as a bool (DeepSpeed's config models are pydantic models):
# exactly these spellings, any letter case; anything else fails validation.
_TRUE = frozenset({"1", "on", "t", "true", "y", "yes"})


def _enabled(section: Any) -> bool:
    """`enabled` of a DeepSpeed precision section as DeepSpeedBF16Config/DeepSpeedFP16Config
    read it: `"auto"` is dropped before validation (DeepSpeedConfigModel.__init__, not strict),
    so it is the default, False; other values are pydantic's lax bool (True, 1, "true", "yes",
    "on", ...). A value DeepSpeed refuses counts as not enabled (the schema reports it)."""
    value = section.get("enabled", False) if isinstance(section, Mapping) else False
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value == 1
    return isinstance(value, str) and value.lower() in _TRUE


def enabled_precisions(config: Mapping[str, Any]) -> tuple[str, ...]:
    """The mixed precisions (`bf16`, `fp16`) a DeepSpeed config enables, as DeepSpeed 0.19.8
    reads it (deepspeed/runtime/precision_config.py `get_bfloat16_config`,
    `get_float16_config`): the `bf16` section, or `bfloat16` only when `bf16` is absent or
    null; `fp16`. Both enabled is a config DeepSpeed refuses (runtime/config.py asserts).
    The trainer reads it the same way (`trainer/dsconfig.py`);
    tests/facts/test_deepspeed_precision.py holds both to DeepSpeed's own classes."""
    bf16 = config.get("bf16")
    if bf16 is None:
        bf16 = config.get("bfloat16")
    return tuple(
        name
        for name, section in (("bf16", bf16), ("fp16", config.get("fp16")))
        if _enabled(section)
    )


def batch_error(config: dict[str, Any], world_size: int, require_batch: bool = True) -> str | None:
    """Why DeepSpeed would reject `config` at `world_size` (None when it accepts it).

    Mirrors DeepSpeed's own derivation (deepspeed/runtime/config.py,
    `_set_batch_related_parameters`): missing values are derived by integer division and
    the product is then asserted. An `"auto"` value is unknown here (HF Trainer sets it), and
    so is a config with neither batch key unless `require_batch` (ours always has one).
    """
    if isinstance(config.get("elasticity"), dict) and config["elasticity"].get("enabled"):
        return None  # DeepSpeed's elasticity block computes the batch itself
    values = [config.get(k) for k in BATCH_KEYS]
    if AUTO in values:
        return None
    tb, mb, gas = values
    for key, value in zip(BATCH_KEYS, values, strict=True):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 1
        ):
            return f"`{key}` must be a positive integer, got {value!r}"
    if tb is None and mb is None:
        return f"set `{MICRO_BATCH}` (or `{TRAIN_BATCH}`)" if require_batch else None
    if tb is not None and mb is not None and gas is not None:
        pass
    elif tb is not None and mb is not None:
        gas = tb // (mb * world_size)
    elif tb is not None and gas is not None:
        mb = tb // (world_size * gas)
    elif mb is not None and gas is not None:
        tb = mb * gas * world_size
    elif tb is not None:
        gas = 1
        mb = tb // world_size
    else:
        gas = 1
        tb = (mb or 1) * world_size
    assert tb is not None and mb is not None and gas is not None
    if mb < 1 or gas < 1 or tb != mb * gas * world_size:
        return (
            f"at world size {world_size} DeepSpeed asserts {TRAIN_BATCH} ({tb}) =="
            f" {MICRO_BATCH} ({mb}) x {GRAD_ACCUM} ({gas}) x {world_size}"
        )
    return None


ZERO = "zero_optimization"
# The `zero_optimization` keys DeepSpeed 0.19.8 reads only while building the optimizer of
# certain ZeRO stages, and those stages (deepspeed/runtime/engine.py): the `zero_stage <=
# ZeroStageEnum.gradients` branch of `_configure_zero_optimizer` (1, 2), its `zero_stage ==
# ZeroStageEnum.weights` branch (3), and `_configure_bf16_optimizer` (the BF16 optimizer,
# which runs at stage 0 with bf16 under pipeline parallelism and at stage 1 with bf16 and fp32
# gradient accumulation: `_do_optimizer_sanity_check`). Keys any other code reads (the
# engine elsewhere, `zero.Init` in partition_parameters.py, runtime/config.py) are left out:
# no warning for them. tests/facts/test_deepspeed_zero_keys.py derives this table from the
# installed DeepSpeed's source and fails when they differ.
ZERO_KEY_STAGES: dict[str, frozenset[int]] = {
    "allgather_bucket_size": frozenset({0, 1, 2}),
    "contiguous_gradients": frozenset({1, 2, 3}),
    "ignore_unused_parameters": frozenset({1, 2}),
    "log_trace_cache_warnings": frozenset({3}),
    "parameter_alignment": frozenset({1, 2}),
    "reduce_scatter": frozenset({1, 2, 3}),
    "round_robin_gradients": frozenset({1, 2}),
    "save_muon_momentum_buffer_in_memory": frozenset({3}),
    "stage3_max_live_parameters": frozenset({3}),
    "stage3_max_reuse_distance": frozenset({3}),
    "stage3_module_granularity_threshold": frozenset({3}),
    "stage3_prefetch_bucket_size": frozenset({3}),
    "sub_group_size": frozenset({3}),
    "use_multi_rank_bucket_allreduce": frozenset({1, 2}),
}


def zero_stage(config: Mapping[str, Any]) -> int | None:
    """The ZeRO stage a config runs at (0 without `zero_optimization`), None if unreadable."""
    section = config.get(ZERO)
    if section is None:
        return 0
    stage = section.get("stage", 0) if isinstance(section, Mapping) else None
    return stage if isinstance(stage, int) and not isinstance(stage, bool) else None


def ignored_zero_keys(config: Mapping[str, Any]) -> list[tuple[str, frozenset[int]]]:
    """The `zero_optimization` keys `config` sets that its ZeRO stage never reads, each with
    the stages that do (`ZERO_KEY_STAGES`)."""
    stage, section = zero_stage(config), config.get(ZERO)
    if stage is None or not isinstance(section, Mapping):
        return []
    return [
        (key, ZERO_KEY_STAGES[key])
        for key in section
        if key in ZERO_KEY_STAGES and stage not in ZERO_KEY_STAGES[key]
    ]


def stages_text(stages: frozenset[int]) -> str:
    """`{0, 1, 2}` -> `stages 0 (the BF16 optimizer), 1 and 2`; `{3}` -> `stage 3`."""
    names = [f"{s} (the BF16 optimizer)" if s == 0 else str(s) for s in sorted(stages)]
    if len(names) == 1:
        return f"stage {names[0]}"
    return f"stages {', '.join(names[:-1])} and {names[-1]}"
