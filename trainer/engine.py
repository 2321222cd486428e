"""Training engines: PyTorch DDP and DeepSpeed ZeRO behind one small surface.

An engine owns the wrapped model, optimizer, LR schedule and mixed precision, and knows how to
take one optimizer step from a list of micro batches and how to save/load its state into a
checkpoint folder. The loop (`trainer.train`) owns data order, RNG, signals and metrics.
"""

from __future__ import annotations

import abc
import argparse
import contextlib
import hashlib
import math
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F
from torch.nn.parallel import DistributedDataParallel
from torch.optim.lr_scheduler import LambdaLR

from trainer.config import ConfigError, TrainConfig
from trainer.dist import DistEnv
from trainer.dsconfig import load_deepspeed_config

# SGD momentum of the ResNet reference recipes (https://arxiv.org/abs/1512.03385, section 3.4).
SGD_MOMENTUM = 0.9
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": None}
DDP_STATE = "state.pt"
DS_TAG = "deepspeed"
DS_UNIVERSAL_TAG = "deepspeed-universal"

Batch = tuple[torch.Tensor, torch.Tensor]


def compute_loss(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Cross-entropy for both tasks: logits [B, C] vs [B], or [B, T, V] vs [B, T]."""
    logits = model(x)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), y.reshape(-1))


def build_optimizer(cfg: TrainConfig, params: Iterator[nn.Parameter]) -> torch.optim.Optimizer:
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(
            params, lr=cfg.lr, momentum=SGD_MOMENTUM, weight_decay=cfg.weight_decay
        )
    return torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)


@dataclass(frozen=True)
class ScheduleClock:
    """Where the learning-rate schedule stands after the scheduler's k-th step.

    `--steps` runs measure the schedule in optimizer steps (the defaults: position k). `--epochs`
    runs measure it in samples consumed globally, laid out with the first launch's global batch:
    after an elastic restart at another world size each step moves the position by the new
    global batch from where the checkpoint left it, so the curve continues instead of jumping
    and ends where the data does.
    """

    total: float
    """Position at which the schedule ends (decay reaches zero)."""
    warmup: float
    """Position at which the linear warm-up ends."""
    per_step: float = 1.0
    """Position gained per optimizer step (the current global batch for `--epochs` runs)."""
    base_step: int = 0
    """Scheduler step count at the checkpoint this process resumed from (0 on a fresh start)."""
    base_position: float = 0.0
    """Position at that checkpoint (samples consumed globally for `--epochs` runs)."""

    def position(self, step: int) -> float:
        return self.base_position + (step - self.base_step) * self.per_step


def lr_lambda(cfg: TrainConfig, clock: ScheduleClock) -> Callable[[int], float]:
    """Linear warm-up, then constant or cosine decay to zero over the run (as a factor).

    `factor(k)` is the factor of the step after k completed ones: warm-up climbs to 1 at the
    step that ends it ((k + 1) / warmup_steps in step units).
    """

    def factor(step: int) -> float:
        here = clock.position(step)
        if clock.warmup and here < clock.warmup:
            return min(1.0, clock.position(step + 1) / clock.warmup)
        if cfg.schedule == "constant":
            return 1.0
        span = max(1.0, clock.total - clock.warmup)
        progress = min(1.0, (here - clock.warmup) / span)
        return 0.5 * (1.0 + math.cos(math.pi * progress))

    return factor


def _update_digest(h: Any, param: torch.Tensor) -> None:
    h.update(param.detach().float().cpu().contiguous().numpy().tobytes())


class Engine(abc.ABC):
    """One optimizer step from micro batches; checkpoint state in and out."""

    optimizer_name = ""
    """Class of the optimizer that steps the weights (logged at start)."""

    @abc.abstractmethod
    def train_step(self, batches: list[Batch]) -> torch.Tensor:
        """Forward/backward every micro batch, step once; returns this rank's mean loss as a
        0-dim tensor on the device, unread: reading it would wait for the step to finish (the
        loop reads losses only at its sync points, `trainer.cadence`)."""

    @abc.abstractmethod
    def lr(self) -> float: ...

    @abc.abstractmethod
    def save(self, folder: Path) -> None:
        """Collective: every rank calls it with the same (temporary) folder."""

    @abc.abstractmethod
    def load(self, folder: Path) -> None:
        """Collective: restore model, optimizer and schedule from a complete folder."""

    @abc.abstractmethod
    def full_state_dict(self) -> dict[str, torch.Tensor] | None:
        """Collective: the whole model's state on rank 0 (None elsewhere), for the export."""

    @abc.abstractmethod
    def param_digest(self) -> str:
        """SHA-256 of all parameters (collective under ZeRO-3, which must gather them; only
        called with `--check-ranks`)."""


class DDPEngine(Engine):
    """DistributedDataParallel with autocast, gradient accumulation (no_sync) and clipping."""

    def __init__(
        self, cfg: TrainConfig, env: DistEnv, model: nn.Module, clock: ScheduleClock
    ) -> None:
        self.cfg = cfg
        self.env = env
        model = model.to(env.device)
        if cfg.channels_last and cfg.is_image:
            model = model.to(memory_format=torch.channels_last)  # type: ignore[call-overload]
        if cfg.compile:
            # In place (nn.Module.compile), so the state dict keeps its keys and checkpoints
            # stay interchangeable with uncompiled runs (torch.compile(model) adds `_orig_mod.`).
            model.compile()
        self.module = model
        self.wrapped: nn.Module = model
        if env.distributed:
            ids = [env.local_rank] if env.device.type == "cuda" else None
            self.wrapped = DistributedDataParallel(model, device_ids=ids)
        self.optimizer = build_optimizer(cfg, model.parameters())
        self.optimizer_name = type(self.optimizer).__name__
        self.scheduler = LambdaLR(self.optimizer, lr_lambda(cfg, clock))
        self.dtype = DTYPES[cfg.precision]
        self.scaler = torch.amp.GradScaler(env.device.type, enabled=cfg.precision == "fp16")

    def train_step(self, batches: list[Batch]) -> torch.Tensor:
        total = torch.zeros((), device=self.env.device)
        n = len(batches)
        for i, (x, y) in enumerate(batches):
            sync = i == n - 1 or not isinstance(self.wrapped, DistributedDataParallel)
            ctx = contextlib.nullcontext() if sync else self.wrapped.no_sync()  # type: ignore[operator]
            with ctx:
                with torch.autocast(
                    self.env.device.type, dtype=self.dtype, enabled=self.dtype is not None
                ):
                    loss = compute_loss(self.wrapped, x, y) / n
                self.scaler.scale(loss).backward()  # type: ignore[no-untyped-call]
            total += loss.detach()
        if self.cfg.grad_clip:
            self.scaler.unscale_(self.optimizer)
            nn.utils.clip_grad_norm_(self.module.parameters(), self.cfg.grad_clip)
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.optimizer.zero_grad(set_to_none=True)
        self.scheduler.step()
        return total

    def lr(self) -> float:
        return float(self.scheduler.get_last_lr()[0])

    def save(self, folder: Path) -> None:
        if not self.env.is_main:
            return  # DDP replicas are identical: one copy on shared storage
        state = {
            "model": self.module.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "scaler": self.scaler.state_dict(),
        }
        with open(folder / DDP_STATE, "wb") as fh:
            torch.save(state, fh)
            fh.flush()
            os.fsync(fh.fileno())

    def load(self, folder: Path) -> None:
        state = torch.load(folder / DDP_STATE, map_location=self.env.device, weights_only=True)
        self.module.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.scaler.load_state_dict(state["scaler"])

    def full_state_dict(self) -> dict[str, torch.Tensor] | None:
        return self.module.state_dict() if self.env.is_main else None

    def param_digest(self) -> str:
        h = hashlib.sha256()
        for param in self.module.parameters():
            _update_digest(h, param)
        return h.hexdigest()


def import_deepspeed() -> Any:
    """DeepSpeed picks its accelerator at import; on machines without CUDA that is the CPU."""
    if not torch.cuda.is_available():
        os.environ.setdefault("DS_ACCELERATOR", "cpu")
    try:
        import deepspeed
    except ImportError as exc:
        raise ConfigError("--engine deepspeed needs the `deepspeed` package in the image") from exc
    return deepspeed


class DeepSpeedEngine(Engine):
    """DeepSpeed ZeRO 0-3 from the JSON config; torch optimizer/schedule unless it names its own.

    Checkpoints use DeepSpeed's own format (every rank writes its shard). Resuming at another
    data-parallel size converts the checkpoint to DeepSpeed's universal format first.
    """

    def __init__(
        self,
        cfg: TrainConfig,
        env: DistEnv,
        model: nn.Module,
        clock: ScheduleClock,
        resume_world_size: int | None = None,
    ) -> None:
        assert cfg.deepspeed_config is not None  # validate() guarantees it
        ds = import_deepspeed()
        self.ds = ds
        self.cfg = cfg
        self.env = env
        config = load_deepspeed_config(cfg.deepspeed_config)
        expected = cfg.batch_size * cfg.grad_accum * env.world_size
        given = config.get("train_batch_size")
        if given is not None and given != expected:
            raise ConfigError(
                f"{cfg.deepspeed_config}: train_batch_size {given} != micro batch {cfg.batch_size}"
                f" x accumulation {cfg.grad_accum} x world size {env.world_size} = {expected};"
                " omit train_batch_size so DeepSpeed derives it (elastic world sizes)"
            )
        optimizer = None
        scheduler: Any = None
        if "optimizer" not in config:
            optimizer = build_ds_optimizer(cfg, config, model)
        if "scheduler" not in config:
            factor = lr_lambda(cfg, clock)

            def scheduler(opt: torch.optim.Optimizer) -> LambdaLR:
                return LambdaLR(opt, factor)

        if cfg.grad_clip and "gradient_clipping" not in config:
            config["gradient_clipping"] = cfg.grad_clip
        self.tag = DS_TAG
        self.universal = resume_world_size is not None and resume_world_size != env.world_size
        if self.universal:
            config.setdefault("checkpoint", {})["load_universal"] = True
            self.tag = DS_UNIVERSAL_TAG
        self.stage = int(config.get("zero_optimization", {}).get("stage", 0))
        self.engine, _, _, _ = ds.initialize(
            model=model,
            optimizer=optimizer,
            model_parameters=None if optimizer is not None else model.parameters(),
            lr_scheduler=scheduler,
            config=config,
        )
        self.input_dtype = DTYPES[cfg.precision] if cfg.is_image else None
        self.optimizer_name = type(self.engine.basic_optimizer).__name__

    def train_step(self, batches: list[Batch]) -> torch.Tensor:
        total = torch.zeros((), device=self.env.device)
        for inputs, y in batches:
            x = inputs.to(self.input_dtype) if self.input_dtype is not None else inputs
            loss = compute_loss(self.engine, x, y)
            self.engine.backward(loss)
            self.engine.step()  # DeepSpeed steps the optimizer at accumulation boundaries
            total += loss.detach().float()
        return total / len(batches)

    def lr(self) -> float:
        return float(self.engine.get_lr()[0])

    def save(self, folder: Path) -> None:
        self.engine.save_checkpoint(str(folder), tag=DS_TAG, save_latest=False)

    def load(self, folder: Path) -> None:
        if self.universal:
            self._convert_universal(folder)
        path, _ = self.engine.load_checkpoint(str(folder), tag=self.tag)
        if path is None:
            raise ConfigError(f"{folder}: DeepSpeed could not load checkpoint tag {self.tag}")

    def _convert_universal(self, folder: Path) -> None:
        """Rank 0 converts `deepspeed/` to `deepspeed-universal/` once (atomic rename)."""
        target = folder / DS_UNIVERSAL_TAG
        if self.env.is_main and not target.is_dir():
            from deepspeed.checkpoint import ds_to_universal

            tmp = folder / f".tmp-{DS_UNIVERSAL_TAG}"
            args = argparse.Namespace(
                input_folder=str(folder / DS_TAG),
                output_folder=str(tmp),
                num_extract_workers=1,
                num_merge_workers=1,
                keep_temp_folder=False,
                strict=True,
                inject_missing_state=True,
            )
            ds_to_universal.main(args)
            os.replace(tmp, target)
        if self.env.distributed:
            torch.distributed.barrier()

    def full_state_dict(self) -> dict[str, torch.Tensor] | None:
        """Under ZeRO-3 every rank holds a slice of each parameter: DeepSpeed's consolidation
        (`runtime/engine.py`, `_zero3_consolidated_16bit_state_dict`, what its `save_16bit_model`
        uses) gathers them one module at a time onto rank 0's CPU, in the training dtype."""
        if self.stage == 3:
            state: dict[str, torch.Tensor] | None = (
                self.engine._zero3_consolidated_16bit_state_dict()
            )
            return state if self.env.is_main else None
        return self.engine.module.state_dict() if self.env.is_main else None

    def param_digest(self) -> str:
        # One parameter at a time: ZeRO-3 never holds more than one gathered tensor at once.
        h = hashlib.sha256()
        for param in self.engine.module.parameters():
            with self.ds.zero.GatheredParameters([param], modifier_rank=None):
                _update_digest(h, param)
        return h.hexdigest()


def offloads_optimizer(config: dict[str, Any]) -> bool:
    """Whether ZeRO keeps optimizer state on the host (`offload_optimizer.device` cpu or nvme),
    where DeepSpeed steps it with its own CPU optimizer."""
    section = config.get("zero_optimization", {}).get("offload_optimizer") or {}
    return str(section.get("device", "none")).lower() in {"cpu", "nvme"}


def build_ds_optimizer(
    cfg: TrainConfig, config: dict[str, Any], model: nn.Module
) -> torch.optim.Optimizer:
    """The client optimizer for a DeepSpeed config without an `optimizer` section.

    With ZeRO-Offload, DeepSpeed 0.19.8 (`runtime/engine.py`, `_configure_optimizer`) refuses any
    client optimizer but its CPU Adam/Lion ("You are using ZeRO-Offload with a client provided
    optimizer"): AdamW is then `DeepSpeedCPUAdam` in AdamW mode (its C++ op is compiled on first
    use when the image did not prebuild it). SGD has no DeepSpeed CPU version: torch's SGD steps
    the offloaded fp32 weights on the host, allowed by `zero_force_ds_cpu_optimizer: false`.
    """
    if offloads_optimizer(config) and cfg.optimizer == "adamw":
        from deepspeed.ops.adam import DeepSpeedCPUAdam

        opt: torch.optim.Optimizer = DeepSpeedCPUAdam(
            model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay, adamw_mode=True
        )
        return opt
    if offloads_optimizer(config):
        config.setdefault("zero_force_ds_cpu_optimizer", False)
    # ZeRO refuses client optimizers it has not tested unless told (AdamW/SGD are fine).
    config.setdefault("zero_allow_untested_optimizer", True)
    return build_optimizer(cfg, model.parameters())


def build_engine(
    cfg: TrainConfig,
    env: DistEnv,
    model: nn.Module,
    clock: ScheduleClock,
    resume_world_size: int | None,
) -> Engine:
    if cfg.engine == "deepspeed":
        return DeepSpeedEngine(cfg, env, model, clock, resume_world_size)
    return DDPEngine(cfg, env, model, clock)
