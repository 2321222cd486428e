"""The training loop: data order, resume, checkpoints, SIGTERM, metrics and structured logs.

Launch: what a rendered PyTorchJob's container runs (`base/resnet50-ddp/pytorchjob.yaml`):

    torchrun -m trainer --model=resnet50 --data=image-folder --data-path=/data/imagenet/train \
        --batch-size=32 --precision=bf16 --checkpoint-dir=/checkpoints/resnet50-ddp

torchrun gets no flags: it reads PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK,
PET_MASTER_ADDR and PET_MASTER_PORT (or PET_RDZV_* for an elastic job) from the environment the
Training Operator sets (`trainops/facts/kubeflow.py`), and sets RANK, LOCAL_RANK and WORLD_SIZE
for each process; the metrics port comes from $TRAINOPS_METRICS_PORT, which the rendered pod
sets from the job's `metricsPort`. The image's own command (trainer/Dockerfile) only prints
`--help`. On one machine, CPU and gloo:

    torchrun --standalone --nproc-per-node=2 -m trainer --model=gpt-tiny \
        --data=synthetic-tokens --steps=20 --checkpoint-dir=/tmp/ckpt

Resume is automatic: when `checkpoint_dir` holds a complete checkpoint the run continues from
it (model, optimizer, schedule, step, position in the epoch, RNG), so an elastic restart or a
rescheduled pod needs no extra flag.
"""

from __future__ import annotations

import json
import logging
import signal
import time
from pathlib import Path
from types import FrameType
from typing import Any

import torch

from trainer.cadence import SyncCadence
from trainer.checkpoint import CheckpointManager
from trainer.config import ConfigError, TrainConfig
from trainer.data import EpochLoader, ResumableDistributedSampler, build_dataset, steps_per_epoch
from trainer.dist import DistEnv, all_gather_str, all_reduce_sum, setup, teardown
from trainer.dsconfig import load_deepspeed_config
from trainer.engine import Engine, ScheduleClock, build_engine
from trainer.export import export_pretrained
from trainer.images import device_transform, nvjpeg_decoder
from trainer.metrics import TrainerMetrics
from trainer.models import build_model
from trainer.prefetch import DevicePrefetcher
from trainer.rng import rng_state, seed_everything, set_rng_state
from trainer.safeload import weights_only_loads
from trainer.watchdog import Watchdog

log = logging.getLogger("trainer")

# Exit code of ranks that stopped because *another* rank was signalled (its pod evicted):
# EX_TEMPFAIL from sysexits.h. Non-zero so torchrun restarts them and the Training Operator does
# not see a finished job; 0 is kept for the ranks that received SIGTERM themselves.
EXIT_PEER_STOPPED = 75
RNG_FILE = "rng-rank{rank}.pt"


def log_event(event: str, **fields: Any) -> None:
    """One JSON object per line: easy to grep in `kubectl logs` and to parse in tests."""
    log.info(json.dumps({"event": event, **fields}, sort_keys=True))


class StopSignal:
    """Turns SIGTERM/SIGINT into a flag the loop checks between steps (never mid-collective)."""

    def __init__(self) -> None:
        self.received: int | None = None

    def install(self) -> None:
        signal.signal(signal.SIGTERM, self._handle)
        signal.signal(signal.SIGINT, self._handle)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.received = signum


class Trainer:
    """State of one run: where it is (step, epoch, position) and the parts that move it."""

    def __init__(self, cfg: TrainConfig, env: DistEnv) -> None:
        self.cfg = cfg
        self.env = env
        self.stop = StopSignal()
        self.stop.install()
        self.watchdog = Watchdog(cfg.hang_timeout, env.rank)
        self.metrics = TrainerMetrics() if env.local_rank == 0 else None
        self._serve_metrics()
        seed_everything(cfg.seed)
        self.decoder = nvjpeg_decoder(env.device) if cfg.data == "image-folder" else None
        self.dataset, num_classes = build_dataset(cfg, jpeg_on_device=self.decoder is not None)
        self.global_batch = cfg.batch_size * cfg.grad_accum * env.world_size
        self.steps_per_epoch = steps_per_epoch(len(self.dataset), self.global_batch)  # type: ignore[arg-type]
        if self.steps_per_epoch < 1:
            raise ConfigError(
                f"data set of {len(self.dataset)} samples is smaller than one global batch "  # type: ignore[arg-type]
                f"({cfg.batch_size} x {cfg.grad_accum} x {env.world_size} processes)"
            )
        self.ckpt = (
            CheckpointManager(cfg.checkpoint_dir, cfg.keep_checkpoints, env)
            if cfg.checkpoint_dir
            else None
        )
        # Collective: rank 0 picks the checkpoint, so every rank resumes from the same step.
        found = self.ckpt.resume_point() if self.ckpt else None
        self.resume_from: Path | None = found[0] if found is not None else None
        meta = found[1] if found is not None else None
        if meta is not None:
            self._check_compatible(meta)
        # The global batch the LR schedule of an `--epochs` run was laid out with: the first
        # launch's, carried from checkpoint to checkpoint across world-size changes.
        self.schedule_batch = (
            int(meta.get("schedule_global_batch", meta["global_batch"]))
            if meta is not None
            else self.global_batch
        )
        self.model = build_model(cfg, num_classes, *self._hf_build_options())
        self.engine: Engine = build_engine(
            cfg, env, self.model, self._schedule_clock(meta), meta["world_size"] if meta else None
        )
        self.step = 0
        self.epoch = 0
        self.consumed = 0  # samples consumed globally in the current epoch
        self.samples_total = 0  # samples consumed globally since the run began
        if self.resume_from is not None and meta is not None:
            self._resume(self.resume_from, meta)
        self.total_steps = self._total_steps()

    def _schedule_clock(self, meta: dict[str, Any] | None) -> ScheduleClock:
        """`--steps` runs schedule the LR by optimizer steps; `--epochs` runs by samples
        consumed, so a restart at another world size continues the same curve."""
        cfg = self.cfg
        if cfg.steps is not None:
            return ScheduleClock(total=cfg.steps, warmup=cfg.warmup_steps)
        batch = self.schedule_batch
        length = len(self.dataset)  # type: ignore[arg-type]
        return ScheduleClock(
            total=cfg.epochs * steps_per_epoch(length, batch) * batch,
            warmup=cfg.warmup_steps * batch,
            per_step=self.global_batch,
            base_step=int(meta["step"]) if meta is not None else 0,
            base_position=int(meta["samples_total"]) if meta is not None else 0,
        )

    def _total_steps(self) -> int:
        """The step count at which the run ends: `--steps`, or for `--epochs` the steps done
        plus those that finish the current and remaining epochs at this global batch (the
        restored position counts samples, so a restart at another world size trains exactly
        the epochs asked for)."""
        cfg = self.cfg
        if cfg.steps is not None:
            return cfg.steps
        if self.epoch >= cfg.epochs:
            return self.step
        length = len(self.dataset)  # type: ignore[arg-type]
        left_in_epoch = (length - self.consumed) // self.global_batch  # 0 once exhausted
        later_epochs = (cfg.epochs - 1 - self.epoch) * self.steps_per_epoch
        return self.step + left_in_epoch + later_epochs

    def _hf_build_options(self) -> tuple[torch.dtype | None, dict[str, Any] | None]:
        """For the Hugging Face path: load in the training dtype, and under ZeRO-3 partitioned
        while loading (a 13B model in fp32 is 52 GB per process otherwise)."""
        cfg = self.cfg
        if cfg.model != "hf-causal-lm":
            return None, None
        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(cfg.precision)
        if cfg.engine != "deepspeed" or cfg.deepspeed_config is None:
            return None, None  # DDP keeps fp32 master weights and autocasts
        ds = load_deepspeed_config(cfg.deepspeed_config)
        stage = int(ds.get("zero_optimization", {}).get("stage", 0))
        return dtype, ds if stage == 3 else None

    def _serve_metrics(self) -> None:
        if self.metrics is None:
            return
        self.metrics.restarts.set(self.env.restart_count)
        self.metrics.world_size.set(self.env.world_size)
        if self.cfg.metrics_port:
            try:
                self.metrics.serve(self.cfg.metrics_port)
            except OSError as exc:  # training matters more than its dashboard
                log.warning(
                    "metrics endpoint on port %s not started: %s", self.cfg.metrics_port, exc
                )

    def _check_compatible(self, meta: dict[str, Any]) -> None:
        saved = meta["config"]
        for name in ("model", "engine", "hf_model", "vocab_size", "seq_len"):
            if saved.get(name) != getattr(self.cfg, name):
                raise ConfigError(
                    f"checkpoint {self.resume_from} was written with {name}={saved.get(name)!r}, "
                    f"this run has {name}={getattr(self.cfg, name)!r}; use another --checkpoint-dir"
                )

    def _resume(self, folder: Path, meta: dict[str, Any]) -> None:
        self.step = int(meta["step"])
        self.epoch = int(meta["epoch"])
        self.consumed = int(meta["samples_in_epoch"])
        self.samples_total = int(meta["samples_total"])
        exact = meta["world_size"] == self.env.world_size
        rng = folder / RNG_FILE.format(rank=self.env.rank)
        with weights_only_loads(str(folder)):  # no code from the checkpoint volume runs
            self.engine.load(folder)
            if exact and rng.is_file():
                set_rng_state(self.env, torch.load(rng, weights_only=True))
        if not (exact and rng.is_file()):  # re-sharded: fresh but deterministic streams
            seed_everything(self.cfg.seed + 7919 * self.env.rank + self.step)
        if self.env.is_main:
            log_event(
                "resumed",
                checkpoint=str(folder),
                step=self.step,
                epoch=self.epoch,
                samples_in_epoch=self.consumed,
                samples_total=self.samples_total,
                saved_world_size=meta["world_size"],
                world_size=self.env.world_size,
                exact=exact,
                restart_count=self.env.restart_count,
            )

    def save(self) -> None:
        if self.ckpt is None:
            return
        start = time.perf_counter()

        def write(folder: Path) -> None:
            self.engine.save(folder)
            with open(folder / RNG_FILE.format(rank=self.env.rank), "wb") as fh:
                torch.save(rng_state(self.env), fh)

        meta = {
            "step": self.step,
            "epoch": self.epoch,
            "samples_in_epoch": self.consumed,
            "samples_total": self.samples_total,
            "world_size": self.env.world_size,
            "global_batch": self.global_batch,
            "schedule_global_batch": self.schedule_batch,
            "engine": self.cfg.engine,
            "config": self.cfg.to_dict(),
        }
        with self.watchdog.paused():  # a save may take longer than a step
            folder = self.ckpt.save(self.step, write, meta)
        seconds = time.perf_counter() - start
        if self.metrics is not None:
            self.metrics.checkpoint_seconds.observe(seconds)
        if self.env.is_main:
            log_event("checkpoint", step=self.step, path=str(folder), seconds=round(seconds, 4))

    def run(self) -> int:
        """Train to `total_steps`; returns the process exit code."""
        cfg, env = self.cfg, self.env
        length = len(self.dataset)  # type: ignore[arg-type]
        sampler = ResumableDistributedSampler(length, env.rank, env.world_size, cfg.seed)
        loader = DevicePrefetcher(
            EpochLoader(
                self.dataset,
                sampler,
                batch_size=cfg.batch_size,
                num_workers=cfg.num_workers,
                pin_memory=cfg.pin_memory and env.device.type == "cuda",
                seed=cfg.seed,
            ),
            env.device,
            device_transform(self.dataset, cfg.channels_last, self.decoder),
        )
        tokens_per_sample = 1 if cfg.is_image else cfg.seq_len
        if env.is_main:
            log_event(
                "start",
                world_size=env.world_size,
                backend=env.backend,
                device=str(env.device),
                global_batch=self.global_batch,
                optimizer=self.engine.optimizer_name,
                total_steps=self.total_steps,
                steps_per_epoch=self.steps_per_epoch,
                restart_count=env.restart_count,
                jpeg_on_device=bool(getattr(self.dataset, "encoded", False)),
                config=cfg.to_dict(),
            )
        self.watchdog.start()
        try:
            stopped = self._loop(loader, length, tokens_per_sample)
        finally:
            self.watchdog.stop()
            loader.close()  # joins the DataLoader workers before the rank reports and exits
        return self._finish(stopped)

    def _loop(self, loader: DevicePrefetcher, length: int, tokens_per_sample: int) -> bool:
        """Steps until the end of the run or an agreed stop; returns whether it stopped early.

        Loss, stop vote and step time are read only at the sync points of `SyncCadence`: in
        between, the host queues step after step without waiting for the device."""
        cfg, env = self.cfg, self.env
        cadence = SyncCadence(cfg.log_interval, cfg.checkpoint_interval, self.total_steps)
        stopped = False
        window = time.perf_counter()  # start of the steps since the last sync
        while self.step < self.total_steps and not stopped:
            if length - self.consumed < self.global_batch:  # epoch exhausted
                self.epoch += 1
                self.consumed = 0
            loader.start(self.epoch, self.consumed)
            for _ in range(loader.sampler.per_rank() // (cfg.batch_size * cfg.grad_accum)):
                batches = [loader.next() for _ in range(cfg.grad_accum)]
                loss = self.engine.train_step(batches)
                self.step += 1
                self.consumed += self.global_batch
                self.samples_total += self.global_batch
                self.watchdog.step_done(self.step)
                if not cadence.due(self.step):
                    continue
                steps = self.step - cadence.last
                elapsed = time.perf_counter() - window
                loss_sum, votes, seconds = all_reduce_sum(env, [loss, self._stop_vote(), elapsed])
                mean_seconds = seconds / env.world_size / steps
                cadence.synced(self.step, mean_seconds)
                self._observe(loss_sum / env.world_size, mean_seconds, steps, tokens_per_sample)
                stopped = votes > 0
                last = self.step >= self.total_steps
                if stopped or last or self.step % cfg.checkpoint_interval == 0:
                    self.save()
                    if not (stopped or last):
                        # A signal that arrived during the save: this checkpoint is the one to
                        # stop on, not another step and another save inside the grace period.
                        stopped = all_reduce_sum(env, [self._stop_vote()])[0] > 0
                window = time.perf_counter()  # a save is not step time
                if stopped or last:
                    break
        return stopped

    def _stop_vote(self) -> float:
        return 1.0 if self.stop.received is not None else 0.0

    def _observe(self, loss: float, seconds: float, steps: int, tokens_per_sample: int) -> None:
        """Metrics and the log line at a sync point: `seconds` is the mean step time of the
        `steps` steps since the previous one (the host did not wait for each)."""
        rate = self.global_batch / seconds if seconds > 0 else 0.0
        lr = self.engine.lr()
        if self.metrics is not None:
            m = self.metrics
            m.samples_per_second.set(rate)
            m.tokens_per_second.set(rate * tokens_per_sample if not self.cfg.is_image else 0.0)
            for _ in range(steps):
                m.step_seconds.observe(seconds)
            m.loss.set(loss)
            m.learning_rate.set(lr)
            m.step.set(self.step)
            m.last_step_timestamp.set(time.time())
            m.samples.inc(self.global_batch * steps)
        if self.env.is_main and (
            self.step % self.cfg.log_interval == 0
            or self.step == 1
            or self.step >= self.total_steps
        ):
            log_event(
                "step",
                step=self.step,
                epoch=self.epoch,
                loss=round(loss, 6),
                lr=lr,
                step_seconds=round(seconds, 6),
                samples_per_second=round(rate, 3),
            )

    def _finish(self, stopped: bool) -> int:
        check: dict[str, Any] = {}
        if self.cfg.check_ranks:  # opt-in: under ZeRO-3 this gathers the whole model
            digests = all_gather_str(self.env, self.engine.param_digest())
            check = {"param_digest": digests[0], "ranks_identical": len(set(digests)) == 1}
        if self.cfg.export_dir and not stopped:  # a stopped run resumes; it exports at its end
            start = time.perf_counter()
            path = export_pretrained(self.env, self.engine, self.model, self.cfg.export_dir)
            if self.env.is_main:
                log_event("exported", path=str(path), seconds=round(time.perf_counter() - start, 3))
        if self.env.is_main:
            log_event(
                "stopped" if stopped else "finished",
                step=self.step,
                samples_total=self.samples_total,
                checkpointed=self.ckpt is not None,
                **check,
            )
        if not stopped or self.stop.received is not None:
            return 0
        return EXIT_PEER_STOPPED


def run(cfg: TrainConfig) -> int:
    """Set up the process group, train, and tear it down after a clean finish."""
    env = setup(cfg.collective_timeout)
    code = Trainer(cfg, env).run()
    log_event("exit", rank=env.rank, code=code)
    # Only a clean finish leaves the group together (a barrier). After an error a peer may be
    # dead, and a barrier or destroy would hang until the collective timeout; process exit
    # releases sockets and communicators, and torchrun restarts the group.
    teardown()
    return code
