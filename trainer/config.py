"""Training configuration: one dataclass, filled from defaults < YAML file < command-line flags.

`parse_args(argv)` is the public entry point: it returns a resolved `TrainConfig` or raises
`ConfigError` (the CLI turns that into exit code 2). The generator package's tests call it on the
commands of rendered jobs, so it reads no file unless asked (`load_files=True`, the default at
runtime): the YAML config and the DeepSpeed config are mounted paths that exist only in the pod.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import yaml

from trainer.dsconfig import apply_deepspeed_config, load_deepspeed_config
from trainer.errors import ConfigError

# ConfigError is re-exported: `trainer.config.ConfigError` is the documented public error type.
__all__ = ["ConfigError", "TrainConfig", "build_parser", "parse_args", "validate"]

MODELS = ("resnet18", "resnet50", "gpt-tiny", "gpt-small", "gpt-medium", "hf-causal-lm")
DATASETS = ("synthetic-image", "synthetic-tokens", "image-folder", "tokens")
OPTIMIZERS = ("sgd", "adamw")
PRECISIONS = ("bf16", "fp16", "fp32")
ENGINES = ("ddp", "deepspeed")
SCHEDULES = ("constant", "cosine")
TOKEN_DTYPES = ("uint16", "int32")
IMAGE_MODELS = frozenset({"resnet18", "resnet50"})

# Prometheus scrape port when neither the flag nor the renderer's env var names one.
# 9090 is what the trainops job spec defaults to as well.
DEFAULT_METRICS_PORT = 9090
METRICS_PORT_ENV = "TRAINOPS_METRICS_PORT"


@dataclass
class TrainConfig:
    """Everything a run needs. Saved inside every checkpoint (`meta.json`, key `config`)."""

    model: str = "resnet18"
    """Model family: ResNet-18/50 (images), GPT (tokens), or a Hugging Face causal LM."""
    hf_model: str | None = None
    """Local directory with a Hugging Face `config.json` (weights loaded when present)."""
    data: str = "synthetic-image"
    """Data set kind; the synthetic ones are learnable so a falling loss proves training works."""
    data_path: str | None = None
    """Root of `image-folder` (class sub-directories) or `tokens` (a flat token file or a dir)."""
    token_dtype: str = "uint16"
    """Element type of the `tokens` file (nanoGPT's `train.bin` is uint16)."""
    dataset_size: int = 2048
    """Samples in a synthetic data set (one epoch)."""
    num_classes: int = 10
    """Classes of the synthetic image set (image-folder counts its sub-directories)."""
    image_size: int = 32
    """Side of synthetic images in pixels (ImageNet-like benchmarks use 224)."""
    seq_len: int = 64
    """Tokens per sample for language models."""
    vocab_size: int = 256
    """Vocabulary of the built-in GPT and synthetic token data."""
    batch_size: int = 32
    """Micro batch per process (per GPU)."""
    grad_accum: int = 1
    """Micro batches accumulated per optimizer step."""
    epochs: int = 1
    """Passes over the data set; ignored when `steps` is set. Counted in samples, so a restart
    at another world size still trains exactly this many epochs."""
    steps: int | None = None
    """Optimizer steps to run in total (wins over `epochs`)."""
    lr: float = 1e-3
    """Peak learning rate."""
    optimizer: str = "adamw"
    """`sgd` (momentum 0.9) or `adamw`."""
    weight_decay: float = 0.0
    """Decoupled weight decay (AdamW) or L2 (SGD)."""
    schedule: str = "constant"
    """Learning-rate schedule after warm-up (`epochs` runs: over samples consumed)."""
    warmup_steps: int = 0
    """Linear warm-up steps (`epochs` runs: the samples of that many steps at the first
    launch's global batch)."""
    precision: str = "fp32"
    """Autocast dtype on the accelerator; fp16 adds a gradient scaler."""
    grad_clip: float | None = None
    """Clip the global gradient norm to this value; off when unset."""
    channels_last: bool = False
    """Use the channels-last memory format for image models (faster convolutions on GPUs)."""
    compile: bool = False
    """`torch.compile` the model (DDP engine): fused kernels, faster steps on GPUs; the first
    steps pay for the compilation, and it needs a C compiler (CPU) or Triton (GPU)."""
    checkpoint_dir: str | None = None
    """Shared-storage directory of `step-N` checkpoints; no checkpoints when unset."""
    checkpoint_interval: int = 100
    """Save every N optimizer steps (and at the end, and on SIGTERM)."""
    keep_checkpoints: int = 3
    """Complete checkpoints kept; older ones are purged by rank 0."""
    seed: int = 0
    """Seed for model init, data order and synthetic data."""
    num_workers: int = 2
    """DataLoader worker processes per rank."""
    pin_memory: bool = True
    """Pin host memory for faster copies to the GPU (ignored on CPU)."""
    metrics_port: int = DEFAULT_METRICS_PORT
    """Prometheus port served by LOCAL_RANK 0 of each pod; 0 disables the endpoint."""
    log_interval: int = 10
    """Emit a structured `step` log line every N steps on rank 0."""
    check_ranks: bool = False
    """At the end, hash the parameters on every rank and log whether all ranks agree (a test
    and debugging aid: under ZeRO-3 it gathers every parameter, which for a large model takes
    longer than a SIGTERM grace period)."""
    collective_timeout: float = 1800.0
    """Seconds a collective (and process-group setup) may wait for the slowest rank before it
    fails: long enough for a large model's checkpoint to reach shared storage while the others
    wait in a barrier (torch's own default for nccl is 10 minutes)."""
    hang_timeout: float = 900.0
    """Seconds without a completed step after which the watchdog dumps every thread's stack and
    the flight recorder and exits non-zero (`trainer.watchdog`); 0 disables it. Armed after the
    first step, paused during checkpoints."""
    gradient_checkpointing: bool = False
    """Recompute activations in the backward pass (Hugging Face path): less memory, ~30% more
    compute per step."""
    export_dir: str | None = None
    """At the end of a finished run, `save_pretrained` the full model here (Hugging Face path;
    ZeRO-3 partitions gathered on rank 0)."""
    engine: str = "ddp"
    """`ddp` (PyTorch DistributedDataParallel) or `deepspeed` (ZeRO from its JSON config)."""
    deepspeed_config: str | None = None
    """DeepSpeed JSON config; the source of truth for micro batch, accumulation and precision."""
    explicit: frozenset[str] = field(default_factory=frozenset, compare=False, repr=False)
    """Names set by a flag or the YAML file (not defaults); used to detect contradictions."""

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (for checkpoints and logs), without the bookkeeping field."""
        out = dataclasses.asdict(self)
        out.pop("explicit")
        return out

    @property
    def is_image(self) -> bool:
        return self.model in IMAGE_MODELS


_FIELDS = {f.name: f for f in dataclasses.fields(TrainConfig) if f.name != "explicit"}

# Allowed range of every numeric field, checked in `validate` for flags, YAML and the
# environment alike: (lowest, lowest is allowed, highest or None). Unset optional fields (None)
# are not checked. A test fails when a numeric field is missing here.
RANGES: dict[str, tuple[float, bool, float | None]] = {
    "dataset_size": (1, True, None),
    "num_classes": (1, True, None),
    "image_size": (1, True, None),
    "seq_len": (1, True, None),
    "vocab_size": (1, True, None),
    "batch_size": (1, True, None),
    "grad_accum": (1, True, None),
    "epochs": (1, True, None),
    "steps": (1, True, None),
    "lr": (0, False, None),
    "weight_decay": (0, True, None),
    "warmup_steps": (0, True, None),
    "grad_clip": (0, False, None),  # unset disables clipping
    "checkpoint_interval": (1, True, None),
    "keep_checkpoints": (1, True, None),
    "seed": (0, True, None),
    "num_workers": (0, True, None),
    "metrics_port": (0, True, 65535),  # 0 disables the endpoint
    "log_interval": (1, True, None),
    "collective_timeout": (0, False, None),
    "hang_timeout": (0, True, None),  # 0 disables the watchdog
}


def _check_range(name: str, value: float | None) -> None:
    if value is None:
        return
    low, inclusive, high = RANGES[name]
    flag = "--" + name.replace("_", "-")
    if not math.isfinite(value):
        raise ConfigError(f"`{name}` ({flag}) must be a finite number, got {value}")
    if value < low or (value == low and not inclusive):
        rule = f">= {low}" if inclusive else f"> {low}"
        if name == "grad_clip":
            rule += " (leave it unset to disable)"
        raise ConfigError(f"`{name}` ({flag}) must be {rule}, got {value}")
    if high is not None and value > high:
        raise ConfigError(f"`{name}` ({flag}) must be {low}..{high}, got {value}")


class _Parser(argparse.ArgumentParser):
    """argparse that raises `ConfigError` instead of printing and exiting (library code)."""

    def error(self, message: str) -> NoReturn:
        raise ConfigError(message)


def build_parser() -> argparse.ArgumentParser:
    """The command-line surface of `python -m trainer` (every default is None: unset)."""
    p = _Parser(
        prog="python -m trainer",
        description="Distributed training entrypoint (DDP or DeepSpeed) launched by torchrun.",
        argument_default=None,
    )
    p.add_argument("--config", help="YAML file of TrainConfig fields; flags override it")
    p.add_argument("--model", choices=MODELS)
    p.add_argument("--hf-model", help="local dir with config.json (needs transformers)")
    p.add_argument("--data", choices=DATASETS)
    p.add_argument("--data-path")
    p.add_argument("--token-dtype", choices=TOKEN_DTYPES)
    p.add_argument("--dataset-size", type=int)
    p.add_argument("--num-classes", type=int)
    p.add_argument("--image-size", type=int)
    p.add_argument("--seq-len", type=int)
    p.add_argument("--vocab-size", type=int)
    p.add_argument("--batch-size", type=int, help="micro batch per process")
    p.add_argument("--grad-accum", type=int)
    p.add_argument("--epochs", type=int)
    p.add_argument("--steps", type=int)
    p.add_argument("--lr", type=float)
    p.add_argument("--optimizer", choices=OPTIMIZERS)
    p.add_argument("--weight-decay", type=float)
    p.add_argument("--schedule", choices=SCHEDULES)
    p.add_argument("--warmup-steps", type=int)
    p.add_argument("--precision", choices=PRECISIONS)
    p.add_argument("--grad-clip", type=float)
    p.add_argument("--channels-last", action=argparse.BooleanOptionalAction)
    p.add_argument("--compile", action=argparse.BooleanOptionalAction)
    p.add_argument("--checkpoint-dir")
    p.add_argument("--checkpoint-interval", type=int)
    p.add_argument("--keep-checkpoints", type=int)
    p.add_argument("--seed", type=int)
    p.add_argument("--num-workers", type=int)
    p.add_argument("--pin-memory", action=argparse.BooleanOptionalAction)
    p.add_argument("--metrics-port", type=int, help=f"default: ${METRICS_PORT_ENV}, else 9090")
    p.add_argument("--log-interval", type=int)
    p.add_argument(
        "--check-ranks",
        action=argparse.BooleanOptionalAction,
        help="log a parameter digest at the end and whether all ranks hold the same parameters",
    )
    p.add_argument("--collective-timeout", type=float, help="seconds (default 1800)")
    p.add_argument("--hang-timeout", type=float, help="seconds without a step (0: off)")
    p.add_argument("--gradient-checkpointing", action=argparse.BooleanOptionalAction)
    p.add_argument("--export-dir", help="save_pretrained the final model here (hf-causal-lm)")
    p.add_argument("--engine", choices=ENGINES)
    p.add_argument("--deepspeed-config", help="DeepSpeed JSON config (engine deepspeed)")
    return p


def _load_yaml(path: str) -> dict[str, Any]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config file ({exc.strerror})") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{path}{where}: invalid YAML: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: must be a mapping of config fields, got {type(data).__name__}")
    unknown = sorted(
        str(k).replace("-", "_") for k in data if str(k).replace("-", "_") not in _FIELDS
    )
    if unknown:
        raise ConfigError(
            f"{path}: unknown config field(s) {', '.join(unknown)}; "
            f"known fields: {', '.join(sorted(_FIELDS))}"
        )
    return {str(k).replace("-", "_"): v for k, v in data.items()}


def _check_types(values: Mapping[str, Any], source: str) -> None:
    """YAML values must have the type of their field (argparse already typed the flags)."""
    for name, value in values.items():
        expected = _FIELDS[name].type
        text = str(expected)
        ok = True
        if value is None:
            ok = "None" in text
        elif "bool" in text:
            ok = isinstance(value, bool)
        elif "int" in text and "frozenset" not in text:
            ok = isinstance(value, int) and not isinstance(value, bool)
        elif "float" in text:
            ok = isinstance(value, int | float) and not isinstance(value, bool)
        elif "str" in text:
            ok = isinstance(value, str)
        if not ok:
            raise ConfigError(f"{source}: `{name}` must be {text}, got {value!r}")


def validate(cfg: TrainConfig) -> None:
    """Every value check in one place (choices, ranges, cross-field rules), whatever set the
    value; messages say which field and what is allowed."""
    choices = {
        "model": MODELS,
        "data": DATASETS,
        "optimizer": OPTIMIZERS,
        "precision": PRECISIONS,
        "engine": ENGINES,
        "schedule": SCHEDULES,
        "token_dtype": TOKEN_DTYPES,
    }
    for name, allowed in choices.items():
        value = getattr(cfg, name)
        if value not in allowed:
            raise ConfigError(f"`{name}` must be one of {', '.join(allowed)}, got {value!r}")
    for name in RANGES:
        _check_range(name, getattr(cfg, name))
    if cfg.model == "hf-causal-lm" and not cfg.hf_model:
        raise ConfigError("`--model hf-causal-lm` needs `--hf-model DIR` (a dir with config.json)")
    if cfg.hf_model and cfg.model != "hf-causal-lm":
        raise ConfigError(f"`--hf-model` is only used with `--model hf-causal-lm`, got {cfg.model}")
    image_data = cfg.data in {"synthetic-image", "image-folder"}
    if cfg.is_image != image_data:
        raise ConfigError(
            f"model {cfg.model} cannot train on data {cfg.data}: image models take "
            "synthetic-image/image-folder, language models synthetic-tokens/tokens"
        )
    if cfg.data in {"image-folder", "tokens"} and not cfg.data_path:
        raise ConfigError(f"`--data {cfg.data}` needs `--data-path PATH`")
    for name in ("gradient_checkpointing", "export_dir"):
        if getattr(cfg, name) and cfg.model != "hf-causal-lm":
            flag = "--" + name.replace("_", "-")
            raise ConfigError(f"`{flag}` is only used with `--model hf-causal-lm`")
    _check_engine(cfg)


def _check_engine(cfg: TrainConfig) -> None:
    """The options that belong to one engine."""
    if cfg.engine == "deepspeed" and not cfg.deepspeed_config:
        raise ConfigError("`--engine deepspeed` needs `--deepspeed-config FILE.json`")
    if cfg.deepspeed_config and cfg.engine != "deepspeed":
        raise ConfigError("`--deepspeed-config` is only used with `--engine deepspeed`")
    if cfg.compile and cfg.engine != "ddp":
        raise ConfigError(
            "`--compile` is only used with `--engine ddp` (DeepSpeed: its config's `compile`)"
        )


def parse_args(
    argv: Sequence[str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    load_files: bool = True,
) -> TrainConfig:
    """Resolve defaults < YAML (`--config`) < flags into a validated `TrainConfig`.

    Raises `ConfigError` for unknown flags, bad values and contradictions. With
    `load_files=False` neither the YAML file nor the DeepSpeed config is read (for checking
    rendered commands on a machine where the mounted paths do not exist).
    """
    environ = os.environ if env is None else env
    ns = vars(build_parser().parse_args(list(argv) if argv is not None else None))
    config_path = ns.pop("config")
    values: dict[str, Any] = {}
    if config_path and load_files:
        from_yaml = _load_yaml(config_path)
        _check_types(from_yaml, config_path)
        values.update(from_yaml)
    flags = {k: v for k, v in ns.items() if v is not None}
    values.update(flags)
    explicit = frozenset(values)
    if "metrics_port" not in values and environ.get(METRICS_PORT_ENV):
        raw = environ[METRICS_PORT_ENV]
        try:
            values["metrics_port"] = int(raw)
        except ValueError as exc:
            raise ConfigError(f"${METRICS_PORT_ENV} must be a port number, got {raw!r}") from exc
    cfg = TrainConfig(**values, explicit=explicit)
    validate(cfg)
    if cfg.engine == "deepspeed" and load_files and cfg.deepspeed_config:
        apply_deepspeed_config(cfg, load_deepspeed_config(cfg.deepspeed_config))
    return cfg
