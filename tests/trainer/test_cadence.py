"""Host syncs only at sync points (trainer/cadence.py), SIGTERM still exact.

The runs are in this process (one rank, no process group) so the sync function can be counted
and every read of a tensor's value by the trainer's own code caught: on a GPU each such read
waits for the queued kernels. The multi-process SIGTERM behaviour (torchrun, gloo, workers) is
tests/trainer/test_distributed.py's.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from tests.tools import REPO, require_module
from tests.trainer.launch import TINY_GPT
from trainer import cadence, train
from trainer.cadence import SYNC_SECONDS, SyncCadence
from trainer.config import parse_args
from trainer.dist import setup

# The modules that hold device tensors in the loop (data sets and the sampler read CPU tensors
# in the workers, which costs the device nothing); `trainer/dist.py`'s sync function is counted.
LOOP_MODULES = frozenset(
    str(REPO / "trainer" / name) for name in ("train.py", "engine.py", "prefetch.py", "images.py")
)


def test_sync_points_are_first_log_checkpoint_last_and_the_agreed_stride() -> None:
    c = SyncCadence(log_interval=10, checkpoint_interval=25, total_steps=60)
    assert [s for s in range(1, 61) if c.due(s)] == [1, *range(2, 61)]  # stride 1 at first
    c.synced(1, mean_step_seconds=SYNC_SECONDS / 7.5)  # 7 steps fill the window
    assert c.stride == 7
    assert [s for s in range(2, 61) if c.due(s)][:3] == [8, 9, 10]
    c.synced(10, mean_step_seconds=0.001)  # short steps: log and checkpoint steps only
    due = [s for s in range(11, 61) if c.due(s)]
    assert due == [20, 25, 30, 40, 50, 60]
    c.synced(20, mean_step_seconds=SYNC_SECONDS * 3)  # long steps: a vote every step
    assert c.stride == 1 and c.due(21)
    c.synced(21, float("nan"))
    assert c.stride == 1


@pytest.fixture
def in_process(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """One rank without a process group; the signal handlers and env restored afterwards."""
    require_module("torch")
    for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TORCH_FR_BUFFER_SIZE", "0")
    monkeypatch.setenv("TORCH_NCCL_DUMP_ON_TIMEOUT", "1")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    yield
    for sig, handler in handlers.items():
        signal.signal(sig, handler)


def run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, steps: int, sigterm_at: int | None = None
) -> tuple[int, list[int], list[str], train.Trainer]:
    """A 25-step gpt-tiny run; returns (exit code, the step of every sync, the trainer-code
    lines that read a tensor's value outside the sync function, the trainer)."""
    args = [*TINY_GPT, "--steps", str(steps), "--log-interval", "10", "--metrics-port", "0",
            "--checkpoint-dir", str(tmp_path), "--checkpoint-interval", "20",
            "--hang-timeout", "0"]  # fmt: skip
    cfg = parse_args(args, env={})
    trainer = train.Trainer(cfg, setup(cfg.collective_timeout))
    syncs: list[int] = []
    reads: list[str] = []
    real_reduce = train.all_reduce_sum

    def counted(env: Any, values: Any) -> list[float]:
        syncs.append(trainer.step)
        return real_reduce(env, values)

    def watch(name: str) -> None:
        real = getattr(torch.Tensor, name)

        def wrapper(self: torch.Tensor, *a: Any, **k: Any) -> Any:
            code = sys._getframe(1).f_code
            if code.co_filename in LOOP_MODULES:
                reads.append(f"{code.co_filename}:{sys._getframe(1).f_lineno} {name}")
            return real(self, *a, **k)

        monkeypatch.setattr(torch.Tensor, name, wrapper)

    real_step = trainer.engine.train_step

    def step(batches: Any) -> Any:
        if sigterm_at is not None and trainer.step + 1 == sigterm_at:
            os.kill(os.getpid(), signal.SIGTERM)
        return real_step(batches)

    monkeypatch.setattr(trainer.engine, "train_step", step)
    monkeypatch.setattr(train, "all_reduce_sum", counted)
    for name in ("item", "tolist", "__float__", "__int__", "__bool__"):
        watch(name)
    code = trainer.run()
    monkeypatch.undo()
    return code, syncs, reads, trainer


def test_a_run_syncs_only_at_log_checkpoint_and_last_steps(
    in_process: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(cadence, "SYNC_SECONDS", 1e9)  # no time-driven syncs: counts exact
    code, syncs, reads, trainer = run(monkeypatch, tmp_path, steps=25)
    assert code == 0 and trainer.step == 25
    # 1 (first), 10 (log), 20 (log + checkpoint, then the vote after the save), 25 (last).
    assert syncs == [1, 10, 20, 20, 25]
    assert reads == []
    assert (tmp_path / "latest").read_text() == "step-25"


def test_sigterm_stops_at_the_next_sync_point_on_a_checkpoint(
    in_process: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(cadence, "SYNC_SECONDS", 1e9)
    code, syncs, _, trainer = run(monkeypatch, tmp_path, steps=1000, sigterm_at=13)
    assert code == 0  # the signalled rank exits 0, as before
    assert trainer.step == 20 and syncs == [1, 10, 20]  # stopped: no vote after the save
    assert (tmp_path / "latest").read_text() == "step-20"
    assert (tmp_path / "step-20" / "meta.json").is_file()


def test_steps_longer_than_the_window_vote_every_step(
    in_process: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A job whose steps take longer than SYNC_SECONDS acts on SIGTERM after the step it
    arrived in, exactly as with a vote every step."""
    monkeypatch.setattr(cadence, "SYNC_SECONDS", 1e-9)
    code, syncs, _, trainer = run(monkeypatch, tmp_path, steps=1000, sigterm_at=13)
    assert code == 0 and trainer.step == 13
    assert syncs == list(range(1, 14))
    assert (tmp_path / "latest").read_text() == "step-13"
